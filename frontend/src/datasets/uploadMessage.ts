// The message under the upload form, kept in step with the uploaded dataset's status.
import type { Dataset } from "../runs/types";
import { describeDataError } from "./csvPreview";

/**
 * The words under the form: a refusal as it came, or the uploaded dataset as it stands now (the list
 * is polled), so "being checked" turns into "ready" or "failed" with the reason, never stays beside it.
 */
export function uploadMessage(message: UploadMessage | null, datasets: Dataset[] | null): { tone: "ok" | "error"; text: string } | null {
  if (!message || message.datasetId === undefined) return message;
  const d = datasets?.find((x) => x.id === message.datasetId);
  if (!d || d.status === "processing") return message;
  if (d.status === "ready") return { tone: "ok", text: `${d.name} is ready.` };
  return { tone: "error", text: `${d.name} failed its check: ${d.error ? describeDataError(d.error) : "see its row below"}` };
}

export interface UploadMessage {
  tone: "ok" | "error";
  text: string;
  /** The dataset the upload made: the message follows its status. */
  datasetId?: number;
}

