import { describe, expect, it } from "vitest";
import { describeDataError, kindForFile, peekCsv, splitLine } from "./csvPreview";

describe("CSV peek", () => {
  it("reads the header and first rows, guessing the delimiter", () => {
    expect(peekCsv("a;b;label\n1;2;x\n3;4;y\n")).toEqual({ delimiter: ";", columns: ["a", "b", "label"], rows: [["1", "2", "x"], ["3", "4", "y"]] });
    expect(peekCsv("a\tb\n1\t2\n").columns).toEqual(["a", "b"]);
  });

  it("drops a line cut off by a partial read and honours quotes", () => {
    const peek = peekCsv('name,"size, cm",y\n"a ""b""",1.5,x\n"c",2', 5);
    expect(peek.columns).toEqual(["name", "size, cm", "y"]);
    expect(peek.rows).toEqual([['a "b"', "1.5", "x"]]);
    expect(splitLine("1,,3", ",")).toEqual(["1", "", "3"]);
  });

  it("knows the kind from the file name and names where a problem is", () => {
    expect(kindForFile("data.CSV")).toBe("csv");
    expect(kindForFile("pets.zip")).toBe("images");
    expect(kindForFile("x.npz")).toBe("tensors");
    expect(kindForFile("x.json")).toBeNull();
    expect(describeDataError({ message: "row 3, column 'b': 'zz' is not a number", row: 3, column: "b" })).toBe("row 3, column 'b': 'zz' is not a number");
    expect(describeDataError({ message: "not an image", entry: "cats/1.png" })).toBe("entry cats/1.png: not an image");
  });
});

describe("decoding the first bytes of a CSV", () => {
  it("reads UTF-16 by its byte-order mark, UTF-8, and falls back to Latin-1", async () => {
    const { decodeCsvHead } = await import("./csvPreview");
    const utf16 = new Uint8Array([0xff, 0xfe, ...Array.from("a;b\n", (c) => [c.charCodeAt(0), 0]).flat()]);
    expect(decodeCsvHead(utf16)).toEqual({ text: "a;b\n", encoding: "utf-16" });
    expect(decodeCsvHead(new TextEncoder().encode("größe,x\n"))).toEqual({ text: "größe,x\n", encoding: "utf-8" });
    expect(decodeCsvHead(new Uint8Array([0x67, 0x72, 0xf6, 0xdf, 0x65]))).toEqual({ text: "größe", encoding: "latin-1" });
  });
});
