// The browser side of imageStats.ts: an image's pixels through a canvas, the upload inverted as a
// PNG, and the training images' background measured on a few test samples the server renders.
import { useEffect, useState } from "react";
import { sampleUrl } from "./api";
import { borderMean, invertPixels, type UploadFacts } from "./imageStats";

/** How many test samples the training background is measured on. */
const SAMPLES = 8;

interface Pixels {
  data: Uint8ClampedArray;
  width: number;
  height: number;
}

function loadImage(src: string): Promise<HTMLImageElement> {
  return new Promise((resolve, reject) => {
    const img = new Image();
    img.onload = () => resolve(img);
    img.onerror = () => reject(new Error("The image could not be read."));
    img.src = src;
  });
}

function canvasOf(img: HTMLImageElement): CanvasRenderingContext2D {
  const canvas = document.createElement("canvas");
  canvas.width = img.naturalWidth;
  canvas.height = img.naturalHeight;
  const ctx = canvas.getContext("2d", { willReadFrequently: true });
  if (!ctx) throw new Error("This browser cannot read image pixels.");
  ctx.drawImage(img, 0, 0);
  return ctx;
}

async function pixelsOf(src: string): Promise<Pixels> {
  const img = await loadImage(src);
  const ctx = canvasOf(img);
  return { data: ctx.getImageData(0, 0, img.naturalWidth, img.naturalHeight).data, width: img.naturalWidth, height: img.naturalHeight };
}

/** Size and background brightness of an uploaded image (a data URL). */
export async function uploadFacts(dataUrl: string): Promise<UploadFacts> {
  const { data, width, height } = await pixelsOf(dataUrl);
  return { width, height, background: borderMean(data, width, height) };
}

/** The upload with every pixel's colour turned around, as a PNG file named "<name>-inverted.png". */
export async function invertedFile(dataUrl: string, name: string): Promise<File> {
  const img = await loadImage(dataUrl);
  const ctx = canvasOf(img);
  const pixels = ctx.getImageData(0, 0, img.naturalWidth, img.naturalHeight);
  pixels.data.set(invertPixels(pixels.data));
  ctx.putImageData(pixels, 0, 0);
  const blob = await new Promise<Blob | null>((resolve) => ctx.canvas.toBlob(resolve, "image/png"));
  if (!blob) throw new Error("The inverted image could not be made.");
  return new File([blob], `${name.replace(/\.[^.]+$/, "")}-inverted.png`, { type: "image/png" });
}

/** Mean background brightness (0..1) of the run's first test samples; null until measured or for no images. */
export function useTrainingBackground(runId: number, images: boolean, testRows: number | null): number | null {
  const [mean, setMean] = useState<number | null>(null);
  useEffect(() => {
    if (!images) return;
    let live = true;
    const count = Math.min(SAMPLES, testRows ?? SAMPLES);
    const indices = Array.from({ length: count }, (_, i) => i);
    Promise.allSettled(indices.map((i) => pixelsOf(sampleUrl(runId, i)))).then((results) => {
      const means = results.flatMap((r) => (r.status === "fulfilled" ? [borderMean(r.value.data, r.value.width, r.value.height)] : []));
      if (live && means.length) setMean(means.reduce((a, b) => a + b, 0) / means.length);
    });
    return () => {
      live = false;
    };
  }, [runId, images, testRows]);
  return mean;
}
