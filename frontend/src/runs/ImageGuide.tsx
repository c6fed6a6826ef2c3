// Beside an image upload: what the model expects (size, grey or colour, brightness range, and
// whether its training images are dark or light drawings, measured on its test samples), the
// upload and what the network saw of it, and advice where they differ, with a one-click invert.
import { useEffect, useState } from "react";
import { uploadFacts } from "./imageCanvas";
import { adviceFor, backgroundOf, backgroundWords, expectedImage, type UploadFacts } from "./imageStats";
import type { NetworkView } from "./judgeTypes";
import type { DatasetSummary } from "./types";

export interface GuideUpload {
  dataUrl: string;
  name: string;
  seen?: NetworkView | null;
}

export function ImageGuide({
  summary,
  training,
  upload,
  onInvert,
  busy = false,
  testid = "image-guide",
}: {
  summary: DatasetSummary | null;
  /** Mean background brightness of the training images (0..1), null until measured. */
  training: number | null;
  upload: GuideUpload | null;
  /** Offered when the upload's background is the opposite of training's. */
  onInvert?: () => void;
  busy?: boolean;
  testid?: string;
}) {
  const expected = expectedImage(summary?.feature_shape);
  const [facts, setFacts] = useState<UploadFacts | null>(null);
  const dataUrl = upload?.dataUrl;
  useEffect(() => {
    setFacts(null);
    if (!dataUrl) return;
    let live = true;
    uploadFacts(dataUrl).then(
      (f) => live && setFacts(f),
      () => undefined,
    );
    return () => {
      live = false;
    };
  }, [dataUrl]);
  if (!expected) return null;
  const advice = facts ? adviceFor(expected, training, facts) : { notes: [], invert: false };
  const seen = upload?.seen;
  return (
    <div className="image-guide" data-testid={testid}>
      <p className="small" data-testid={`${testid}-expects`}>
        <b>The model expects</b> {expected.width}×{expected.height} pixels, {expected.channels === 1 ? "grey (1 channel)" : `colour (${expected.channels} channels)`}, brightness from 0 (black) to 1
        (white)
        {training !== null && (
          <>
            ; its training images are a {backgroundWords(backgroundOf(training))} (background brightness {Math.round(training * 100)}%)
          </>
        )}
        . Other images are converted and resized to that.
      </p>
      {upload && (
        <div className="guide-images">
          <figure>
            <img src={upload.dataUrl} alt={`uploaded ${upload.name}`} className="thumb" data-testid={testid === "image-guide" ? "predict-image-preview" : `${testid}-upload`} width={56} height={56} />
            <figcaption className="small muted">your image{facts ? ` · ${facts.width}×${facts.height}` : ""}</figcaption>
          </figure>
          {seen && (
            <figure>
              <img src={seen.png} alt={`${upload.name} as the network saw it`} className="thumb pixelated" data-testid={`${testid}-seen`} width={56} height={56} />
              <figcaption className="small muted">
                what the network saw · {seen.size[1]}×{seen.size[0]} {seen.channels === 1 ? "grey" : "colour"}, brightness {Math.round(seen.mean * 100)}%
              </figcaption>
            </figure>
          )}
        </div>
      )}
      {advice.notes.map((note) => (
        <p key={note} className="warn small" data-testid={`${testid}-advice`}>
          {note}
        </p>
      ))}
      {advice.invert && onInvert && (
        <button type="button" data-testid="predict-invert" disabled={busy} onClick={onInvert}>
          Invert the colours and predict again
        </button>
      )}
    </div>
  );
}
