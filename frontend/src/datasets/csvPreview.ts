// A first look at a CSV before it is uploaded: the header and a few rows, so the user can pick the
// target column. The server checks the whole file; this only reads the first bytes.

export interface CsvPeek {
  delimiter: string;
  columns: string[];
  rows: string[][];
}

const CANDIDATES = [",", ";", "\t", "|"];

/** Splits one CSV line, honouring double quotes ("a,b" stays one cell; "" is a quote). */
export function splitLine(line: string, delimiter: string): string[] {
  const cells: string[] = [];
  let cell = "";
  let quoted = false;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quoted) {
      if (c === '"' && line[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"' && cell === "") quoted = true;
    else if (c === delimiter) {
      cells.push(cell);
      cell = "";
    } else cell += c;
  }
  cells.push(cell);
  return cells.map((x) => x.trim());
}

/** The delimiter that splits the header into the most cells (comma on a tie). */
export function guessDelimiter(header: string): string {
  let best = ",";
  let most = 1;
  for (const d of CANDIDATES) {
    const n = splitLine(header, d).length;
    if (n > most) {
      best = d;
      most = n;
    }
  }
  return best;
}

/** Reads the header and up to `maxRows` rows from the start of a CSV text. */
export function peekCsv(text: string, maxRows = 5): CsvPeek {
  // The last line of a partial read may be cut off: drop it unless the text ends with a newline.
  const lines = text.replace(/^\uFEFF/, "").split(/\r?\n/);
  if (lines.length > 1 && !/\r?\n$/.test(text)) lines.pop();
  const nonEmpty = lines.filter((l) => l.trim() !== "");
  if (nonEmpty.length === 0) return { delimiter: ",", columns: [], rows: [] };
  const delimiter = guessDelimiter(nonEmpty[0]);
  const columns = splitLine(nonEmpty[0], delimiter);
  const rows = nonEmpty.slice(1, 1 + maxRows).map((l) => splitLine(l, delimiter));
  return { delimiter, columns, rows };
}

/** The dataset kind an upload's file name implies, or null. */
export function kindForFile(name: string): "csv" | "images" | "tensors" | null {
  const lower = name.toLowerCase();
  if (/\.(csv|tsv|txt)$/.test(lower)) return "csv";
  if (lower.endsWith(".zip")) return "images";
  if (/\.(safetensors|npz)$/.test(lower)) return "tensors";
  return null;
}

/** Where a dataset problem is, in words: "row 3, column 'b'" or "entry cats/x.png". */
export function describeDataError(e: { message: string; row?: number | null; column?: string | null; entry?: string | null } | null): string {
  if (!e) return "";
  const where: string[] = [];
  if (e.row !== null && e.row !== undefined) where.push(`row ${e.row}`);
  if (e.column) where.push(`column '${e.column}'`);
  if (e.entry) where.push(`entry ${e.entry}`);
  const prefix = where.join(", ");
  // The engine's message usually names the place already; say it once.
  return prefix && !e.message.includes(prefix) ? `${prefix}: ${e.message}` : e.message;
}

/** The first bytes of a CSV as text, decoded as the server will: a byte-order mark says UTF-16
 * (or UTF-8), text that is not UTF-8 is Latin-1. A multi-byte character cut at the end is dropped. */
export function decodeCsvHead(bytes: Uint8Array): { text: string; encoding: "utf-8" | "utf-16" | "latin-1" } {
  if (bytes.length >= 2 && ((bytes[0] === 0xff && bytes[1] === 0xfe) || (bytes[0] === 0xfe && bytes[1] === 0xff))) {
    const label = bytes[0] === 0xff ? "utf-16le" : "utf-16be";
    const even = bytes.subarray(2, 2 + ((bytes.length - 2) & ~1));
    return { text: new TextDecoder(label).decode(even), encoding: "utf-16" };
  }
  try {
    // stream: true leaves a character cut by the 64 KiB slice out instead of failing on it.
    return { text: new TextDecoder("utf-8", { fatal: true, ignoreBOM: false }).decode(bytes, { stream: true }), encoding: "utf-8" };
  } catch {
    return { text: new TextDecoder("latin1").decode(bytes), encoding: "latin-1" };
  }
}
