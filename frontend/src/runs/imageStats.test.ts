import { describe, expect, it } from "vitest";
import { adviceFor, backgroundOf, borderMean, expectedImage, invertPixels } from "./imageStats";

/** A w×h RGBA image of one grey level with a different centre pixel. */
function image(w: number, h: number, edge: number, centre: number): Uint8ClampedArray {
  const data = new Uint8ClampedArray(w * h * 4);
  for (let i = 0; i < w * h; i++) {
    const x = i % w;
    const y = Math.floor(i / w);
    const v = x > 0 && y > 0 && x < w - 1 && y < h - 1 ? centre : edge;
    data.set([v, v, v, 255], 4 * i);
  }
  return data;
}

describe("borderMean", () => {
  it("reads the background off the outer ring, not the drawing", () => {
    expect(borderMean(image(4, 4, 255, 0), 4, 4)).toBeCloseTo(1);
    expect(borderMean(image(4, 4, 0, 255), 4, 4)).toBeCloseTo(0);
    expect(backgroundOf(borderMean(image(8, 8, 10, 250), 8, 8))).toBe("dark");
  });

  it("inverts a drawing (and makes it opaque)", () => {
    const inverted = invertPixels(new Uint8ClampedArray([0, 10, 255, 0]));
    expect([...inverted]).toEqual([255, 245, 0, 255]);
  });
});

describe("adviceFor", () => {
  const digits = expectedImage([1, 8, 8]);

  it("offers to invert a black-on-white digit for white-on-black training data", () => {
    const advice = adviceFor(digits, 0.02, { width: 8, height: 8, background: 0.97 });
    expect(advice.invert).toBe(true);
    expect(advice.notes[0]).toMatch(/dark drawing on a light background; the training images are a light drawing on a dark background/);
  });

  it("says how much a big upload is shrunk", () => {
    const advice = adviceFor(digits, 0.02, { width: 64, height: 64, background: 0.01 });
    expect(advice.invert).toBe(false);
    expect(advice.notes).toEqual([expect.stringMatching(/64×64; it is shrunk 8.0× to 8×8, so thin strokes blur away/)]);
  });

  it("has nothing to say about an upload like the training images", () => {
    expect(adviceFor(digits, 0.02, { width: 8, height: 8, background: 0.0 })).toEqual({ notes: [], invert: false });
    expect(adviceFor(null, null, { width: 30, height: 30, background: 1 })).toEqual({ notes: [], invert: false });
  });

  it("reads the network's input size from the feature shape", () => {
    expect(expectedImage([3, 32, 28])).toEqual({ channels: 3, height: 32, width: 28 });
    expect(expectedImage([4])).toBeNull();
  });
});
