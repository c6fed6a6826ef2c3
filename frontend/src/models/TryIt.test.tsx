import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { TryIt, snippetRequest } from "./TryIt";

describe("the try-it form", () => {
  it("says the model is not served when there is no endpoint", () => {
    const html = renderToStaticMarkup(<TryIt endpoint={null} served={[]} />);
    expect(html).toContain('data-testid="not-served"');
    expect(html).toContain("This model is not served yet");
    expect(html).not.toContain("<form");
  });

  it("shows the endpoint and waits for the model's inputs", () => {
    const html = renderToStaticMarkup(<TryIt endpoint="http://x.test/v2/models/3-flowers" served={[[2, "production"]]} />);
    expect(html).toContain("http://x.test/v2/models/3-flowers");
    expect(html).toContain("v2 (production)");
    expect(html).toContain("Reading the model&#x27;s inputs");
  });

  it("fills the snippets with zeros and placeholders until the form is complete", () => {
    const inputs = [
      { name: "petal width (cm)", datatype: "FP32", shape: [-1] },
      { name: "image", datatype: "BYTES", shape: [-1] },
    ];
    expect(snippetRequest(inputs, {}).inputs.map((t) => t.data[0])).toEqual([0, "<base64 of your image>"]);
    expect(snippetRequest(inputs, { "petal width (cm)": "1.5", image: "QUJD" }).inputs.map((t) => t.data[0])).toEqual([1.5, "QUJD"]);
  });
});
