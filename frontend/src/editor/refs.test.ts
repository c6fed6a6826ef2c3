import { describe, expect, it } from "vitest";
import { refOf, sourceHandleOf, splitRef } from "./refs";

describe("references to node outputs", () => {
  it("splits references the way the engine does", () => {
    expect(splitRef("split1:12")).toEqual({ node: "split1", port: 12 });
    expect(splitRef("fc1")).toEqual({ node: "fc1", port: null });
    expect(splitRef("a:01")).toEqual({ node: "a:01", port: null });
    expect(sourceHandleOf("split1:0")).toBe("out0");
    expect(sourceHandleOf("fc1")).toBe("out");
    expect(refOf("split1", "out3")).toBe("split1:3");
    expect(refOf("fc1", "out")).toBe("fc1");
    expect(refOf("fc1", null)).toBe("fc1");
  });
});
