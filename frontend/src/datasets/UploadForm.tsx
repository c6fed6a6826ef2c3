// Upload a CSV (pick the target after seeing its columns), an image zip or a tensor file, with progress.
import { useId, useRef, useState } from "react";
import { ApiError, type UploadProgress, uploadForm } from "../api/client";
import { formatBytes } from "../format";
import { JobProgress } from "../jobs/JobProgress";
import { jobView } from "../jobs/jobState";
import type { DataErrorJson, Dataset } from "../runs/types";
import { type CsvPeek, decodeCsvHead, describeDataError, kindForFile, peekCsv } from "./csvPreview";
import { type UploadMessage, uploadMessage } from "./uploadMessage";

const PEEK_BYTES = 64 * 1024;

type Kind = "csv" | "images" | "tensors";

export function UploadForm({ team, datasets, onDone }: { team: number; datasets: Dataset[] | null; onDone: () => void }) {
  const ids = useId();
  const fileInput = useRef<HTMLInputElement>(null);
  const [file, setFile] = useState<File | null>(null);
  const [kind, setKind] = useState<Kind | null>(null);
  const [name, setName] = useState("");
  const [peek, setPeek] = useState<CsvPeek | null>(null);
  const [target, setTarget] = useState("");
  const [task, setTask] = useState("auto");
  const [encoding, setEncoding] = useState("auto");
  const [detected, setDetected] = useState<string | null>(null);
  const [size, setSize] = useState("32");
  const [channels, setChannels] = useState("3");
  const [progress, setProgress] = useState<UploadProgress | null>(null);
  const [message, setMessage] = useState<UploadMessage | null>(null);
  const shown = uploadMessage(message, datasets);
  const abort = useRef<AbortController | null>(null);

  async function pick(f: File | null) {
    setFile(f);
    setMessage(null);
    setPeek(null);
    setTarget("");
    const k = f ? kindForFile(f.name) : null;
    setKind(k);
    if (f && !k) setMessage({ tone: "error", text: `${f.name}: choose a .csv, a .zip of images (one folder per class), or a .safetensors/.npz file.` });
    if (f && k === "csv") {
      const head = decodeCsvHead(new Uint8Array(await f.slice(0, PEEK_BYTES).arrayBuffer()));
      setDetected(head.encoding);
      setEncoding("auto");
      const p = peekCsv(head.text);
      setPeek(p);
      setTarget(p.columns[p.columns.length - 1] ?? "");
    }
  }

  function options(): Record<string, unknown> {
    if (kind === "csv")
      return {
        ...(target ? { target } : {}),
        ...(task !== "auto" ? { task } : {}),
        ...(peek && peek.delimiter !== "," ? { delimiter: peek.delimiter } : {}),
        ...(encoding !== "auto" ? { encoding } : {}),
      };
    if (kind === "images") return { size: [Number(size), Number(size)], channels: Number(channels) };
    if (kind === "tensors") return task !== "auto" ? { task } : {};
    return {};
  }

  async function upload() {
    if (!file || !kind) return;
    const form = new FormData();
    form.append("team", String(team));
    form.append("kind", kind);
    if (name.trim()) form.append("name", name.trim());
    form.append("options", JSON.stringify(options()));
    form.append("file", file);
    abort.current = new AbortController();
    setMessage(null);
    setProgress({ loaded: 0, total: file.size });
    try {
      const { status, data } = await uploadForm<Dataset>("/api/datasets/upload/", form, setProgress, abort.current.signal);
      setMessage({
        tone: "ok",
        text: status === 202 ? `${data.name} is uploaded and being checked.` : `${data.name} is ready.`,
        datasetId: data.id,
      });
      setFile(null);
      setKind(null);
      setPeek(null);
      setName("");
      if (fileInput.current) fileInput.current.value = "";
    } catch (e) {
      if (e instanceof ApiError) {
        const detail = e.body.detail as DataErrorJson | undefined;
        const text = e.status === 413 ? `The file is too large: ${e.message}` : detail && typeof detail === "object" ? describeDataError(detail) : e.message;
        setMessage({ tone: "error", text });
      } else if ((e as Error).name !== "AbortError") setMessage({ tone: "error", text: (e as Error).message });
      else setMessage({ tone: "error", text: "Upload cancelled." });
    } finally {
      setProgress(null);
      abort.current = null;
      onDone();
    }
  }

  const uploading = progress !== null;
  const fraction = progress && progress.total ? progress.loaded / progress.total : null;

  return (
    <form
      className="dataset-form"
      aria-label="Upload a dataset"
      onSubmit={(e) => {
        e.preventDefault();
        void upload();
      }}
    >
      <h2>Upload</h2>
      <div className="row">
        <input
          ref={fileInput}
          type="file"
          aria-label="Dataset file"
          data-testid="upload-file"
          accept=".csv,.tsv,.txt,.zip,.safetensors,.npz"
          disabled={uploading}
          onChange={(e) => void pick(e.target.files?.[0] ?? null)}
        />
        <input aria-label="Dataset name" placeholder="Name (optional)" data-testid="upload-name" value={name} onChange={(e) => setName(e.target.value)} />
      </div>
      {file && kind && (
        <p className="help">
          {file.name} · {formatBytes(file.size)} · {kind === "csv" ? "CSV table" : kind === "images" ? "image archive" : "tensors"}
        </p>
      )}
      {kind === "csv" && peek && (
        <>
          <div className="csv-peek" data-testid="upload-columns">
            <table className="table small">
              <thead>
                <tr>
                  {peek.columns.map((c, i) => (
                    <th key={i} className={c === target ? "target-col" : undefined}>
                      {c}
                    </th>
                  ))}
                </tr>
              </thead>
              <tbody>
                {peek.rows.map((r, i) => (
                  <tr key={i}>
                    {r.map((cell, j) => (
                      <td key={j}>{cell}</td>
                    ))}
                  </tr>
                ))}
              </tbody>
            </table>
          </div>
          <div className="row">
            <label htmlFor={`${ids}-target`}>Target column</label>
            <select id={`${ids}-target`} data-testid="upload-target" value={target} onChange={(e) => setTarget(e.target.value)}>
              <option value="">None yet (check the file only)</option>
              {peek.columns.map((c) => (
                <option key={c} value={c}>
                  {c}
                </option>
              ))}
            </select>
            <label htmlFor={`${ids}-task`}>Task</label>
            <select id={`${ids}-task`} data-testid="upload-task" value={task} onChange={(e) => setTask(e.target.value)}>
              <option value="auto">Guess from the target</option>
              <option value="classification">Classification</option>
              <option value="regression">Regression</option>
            </select>
            <label htmlFor={`${ids}-encoding`}>Encoding</label>
            <select id={`${ids}-encoding`} data-testid="upload-encoding" value={encoding} onChange={(e) => setEncoding(e.target.value)}>
              <option value="auto">Detect{detected ? ` (${detected.toUpperCase()})` : ""}</option>
              <option value="utf-8">UTF-8</option>
              <option value="utf-16">UTF-16</option>
              <option value="latin-1">Latin-1</option>
            </select>
          </div>
          <p className="help">
            Every other column is a feature (leave some out in the preview once it is ready); text columns are one-hot encoded;
            empty cells are filled (median for numbers, a "(missing)" category for text) unless you choose otherwise.
          </p>
        </>
      )}
      {kind === "images" && (
        <div className="row">
          <label htmlFor={`${ids}-size`}>Resize to</label>
          <input id={`${ids}-size`} type="number" min={1} max={1024} value={size} onChange={(e) => setSize(e.target.value)} style={{ width: 80 }} />
          <span className="muted">px square</span>
          <label htmlFor={`${ids}-channels`}>Channels</label>
          <select id={`${ids}-channels`} value={channels} onChange={(e) => setChannels(e.target.value)}>
            <option value="3">3 (colour)</option>
            <option value="1">1 (grey)</option>
          </select>
        </div>
      )}
      {kind === "tensors" && (
        <div className="row">
          <label htmlFor={`${ids}-ttask`}>Task</label>
          <select id={`${ids}-ttask`} value={task} onChange={(e) => setTask(e.target.value)}>
            <option value="auto">Guess from y</option>
            <option value="classification">Classification</option>
            <option value="regression">Regression</option>
          </select>
        </div>
      )}
      <div className="row">
        <button type="submit" className="primary" data-testid="upload-submit" disabled={!file || !kind || uploading}>
          Upload
        </button>
        {uploading && (
          <>
            <JobProgress
              view={jobView("working", fraction)}
              what="Upload"
              detail={progress && progress.total ? `${formatBytes(progress.loaded)} of ${formatBytes(progress.total)}` : undefined}
              barTestid="upload-progress"
              barLabel="Upload progress"
            />
            <button type="button" onClick={() => abort.current?.abort()}>
              Cancel upload
            </button>
          </>
        )}
      </div>
      {shown && (
        <p className={shown.tone === "ok" ? "ok" : "error"} role={shown.tone === "error" ? "alert" : "status"} data-testid="upload-message">
          {shown.text}
        </p>
      )}
    </form>
  );
}
