// What an image model expects next to what the user uploaded: background brightness (is the
// drawing dark on light or light on dark?), size, and the advice that follows. The training side
// is measured on the run's test samples as the server renders them; the upload's in the browser.
// Pure (pixels in, numbers and words out): tested in vitest; imageCanvas.ts reads the pixels.

/** Brightness 0 (black) .. 1 (white) of one RGBA pixel, as Pillow's convert("L") weighs it. */
function luma(data: ArrayLike<number>, i: number): number {
  return (0.299 * data[i] + 0.587 * data[i + 1] + 0.114 * data[i + 2]) / 255;
}

/** Mean brightness of the outermost ring of pixels: the background of a centred drawing. */
export function borderMean(data: ArrayLike<number>, width: number, height: number): number {
  if (width < 1 || height < 1) return 0;
  let sum = 0;
  let n = 0;
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (y !== 0 && y !== height - 1 && x !== 0 && x !== width - 1) continue;
      sum += luma(data, 4 * (y * width + x));
      n++;
    }
  }
  return sum / n;
}

export type Background = "dark" | "light";

export function backgroundOf(mean: number): Background {
  return mean < 0.5 ? "dark" : "light";
}

export function backgroundWords(background: Background): string {
  return background === "dark" ? "light drawing on a dark background" : "dark drawing on a light background";
}

/** Every pixel's colour turned around (255 − value); alpha made opaque, as the server drops it. */
export function invertPixels(data: Uint8ClampedArray): Uint8ClampedArray {
  const out = new Uint8ClampedArray(data.length);
  for (let i = 0; i < data.length; i += 4) {
    out[i] = 255 - data[i];
    out[i + 1] = 255 - data[i + 1];
    out[i + 2] = 255 - data[i + 2];
    out[i + 3] = 255;
  }
  return out;
}

/** What the network takes: [C, H, W] of the dataset's feature shape (or [H, W]); null otherwise. */
export function expectedImage(featureShape: readonly number[] | null | undefined): { channels: number; height: number; width: number } | null {
  const shape = featureShape ?? [];
  if (shape.length === 3) return { channels: shape[0], height: shape[1], width: shape[2] };
  if (shape.length === 2) return { channels: 1, height: shape[0], width: shape[1] };
  return null;
}

export interface UploadFacts {
  width: number;
  height: number;
  /** Border brightness 0..1. */
  background: number;
}

export interface Advice {
  /** Sentences to show, worst first. */
  notes: string[];
  /** Offer the one-click invert: the upload's background is the opposite of training's. */
  invert: boolean;
}

/** What to tell the user about an upload against the training images. */
export function adviceFor(expected: { height: number; width: number } | null, training: number | null, upload: UploadFacts): Advice {
  const notes: string[] = [];
  const invert = training !== null && backgroundOf(training) !== backgroundOf(upload.background);
  if (invert && training !== null) {
    notes.push(`Your image is a ${backgroundWords(backgroundOf(upload.background))}; the training images are a ${backgroundWords(backgroundOf(training))}. The model has never seen yours: invert it.`);
  }
  if (expected && (upload.width !== expected.width || upload.height !== expected.height)) {
    const factor = Math.max(upload.width / expected.width, upload.height / expected.height);
    const size = `${expected.width}×${expected.height}`;
    if (factor >= 2)
      notes.push(
        `Your image is ${upload.width}×${upload.height}; it is shrunk ${factor.toFixed(1)}× to ${size}, so thin strokes blur away. Draw it to fill the frame, with strokes as thick as in training.`,
      );
    else notes.push(`Your image is ${upload.width}×${upload.height}; it is resized to ${size}.`);
  }
  return { notes, invert };
}
