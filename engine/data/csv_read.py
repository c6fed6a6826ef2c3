"""CSV text into Arrow: encoding and dialect detection, a streaming read, a columnar copy on disk.

The CSV is tokenised by pyarrow's C++ reader, streamed in blocks, every cell kept as text
(trimmed); deciding what is a number, a category or a gap happens later, on whole columns
(`engine.data.csv_table`). `build_csv_table` writes that text table once as an Arrow IPC file
beside the original; training, explanation and prediction read the IPC file instead of
parsing the CSV again. A malformed file is read a second time by Python's csv module only to
name the row, as a spreadsheet numbers it (the header is row 1).
"""

from __future__ import annotations

import codecs
import csv
import io
import json
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, BinaryIO

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

from engine.atomic import atomic_file
from engine.data.errors import DataError
from engine.data.limits import DataLimits, checked_file_size

ENCODINGS = ("auto", "utf-8", "utf-16", "latin-1")
DELIMITERS = ",;\t|"
TABLE_FORMAT = 1  # bump when the stored table's layout changes; older files are rebuilt
META_KEY = b"netloom_csv"
SAMPLE_BYTES = 64 * 1024
BLOCK_BYTES = 1 << 20

Progress = Callable[[float], None]


@dataclass(frozen=True)
class CsvFormat:
    """How a CSV file was read: what a stored table must match to stand in for the file."""

    encoding: str  # resolved: utf-8 | utf-16 | latin-1
    delimiter: str
    quotechar: str
    requested_encoding: str = "auto"  # what the recipe asked for
    requested_delimiter: str | None = None  # None: detected
    detected_encoding: bool = False  # True when "auto" resolved to something other than UTF-8/BOM
    csv_size: int = 0
    rows: int = 0
    version: int = TABLE_FORMAT

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class NotUtf8:
    """Where a file stops being UTF-8: the first byte sequence that does not decode."""

    offset: int  # of the first bad byte, from 0
    row: int  # the line it is on (the header is row 1)
    bad: bytes  # the bytes that do not decode, shown escaped (b'\xe9')
    mixed: bool  # other non-ASCII text in the file is UTF-8: the file mixes encodings

    def message(self, hint: str = "") -> str:
        """What the user reads: the byte, the bytes escaped, the encoding tried."""
        if self.mixed:
            return (f"byte {self.offset}: {self.bad!r} is not UTF-8, though the file's other "
                    "accented text is: the file mixes encodings. Save it as UTF-8 throughout"
                    f"{', or choose its encoding (latin-1 or utf-16)' if hint else ''}")
        return f"the file is not UTF-8 text: {self.bad!r} at byte {self.offset} does not decode{hint}"


def find_not_utf8(path: str, *, lookahead: int = BLOCK_BYTES * 4) -> NotUtf8 | None:
    """The first place the file is not UTF-8, or None; reads the file once, in blocks.

    `mixed` looks for UTF-8 text before the bad bytes and in up to `lookahead` bytes after them.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    consumed = newlines = 0
    seen_non_ascii = False
    with open(path, "rb") as f:
        while chunk := f.read(BLOCK_BYTES * 4):
            pending = decoder.getstate()[0]
            try:
                text = decoder.decode(chunk)
            except UnicodeDecodeError as exc:
                start = consumed - len(pending) + exc.start
                seen_non_ascii = seen_non_ascii or not exc.object[: exc.start].decode(
                    "utf-8", errors="ignore").isascii()
                after = exc.object[exc.end :] + f.read(lookahead)
                mixed = seen_non_ascii or not after.decode("utf-8", errors="ignore").isascii()
                row = newlines + exc.object[: exc.start].count(b"\n") + 1
                return NotUtf8(start, row, bytes(exc.object[exc.start : exc.end]), mixed)
            seen_non_ascii = seen_non_ascii or not text.isascii()
            newlines += chunk.count(b"\n")
            consumed += len(chunk)
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:  # the file ends inside a character
            return NotUtf8(consumed - len(exc.object) + exc.start, newlines + 1,
                           bytes(exc.object[exc.start :]), seen_non_ascii)
    return None


def resolve_encoding(path: str, requested: str, *, guess: bool = False) -> tuple[str, bool]:
    """(encoding, detected): a BOM decides under "auto"; with `guess`, non-UTF-8 text is Latin-1."""
    if requested not in ENCODINGS:
        raise DataError(
            f"unknown encoding {requested!r}; use one of {', '.join(ENCODINGS)}",
            field="source.encoding",
        )
    if requested != "auto":
        return requested, False
    with open(path, "rb") as f:
        head = f.read(4)
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", False  # pyarrow skips the BOM itself
    if head[:2] in (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE):
        return "utf-16", True
    if guess:
        bad = find_not_utf8(path)
        if bad is not None and bad.mixed:
            # Read as Latin-1, its UTF-8 text would show as mojibake ("CafÃ©") in every message.
            raise DataError(bad.message("choose"), row=bad.row)
        if bad is not None:
            return "latin-1", True
    return "utf-8", False


def _sample_text(path: str, encoding: str) -> str:
    with open(path, "rb") as f:
        raw = f.read(SAMPLE_BYTES)
    codec = "utf-8-sig" if encoding == "utf-8" else encoding
    text = codecs.getincrementaldecoder(codec)(errors="replace").decode(raw, final=False)
    # Drop a last line cut in the middle: the sniffer would count its fields wrong.
    if len(raw) == SAMPLE_BYTES and "\n" in text:
        text = text[: text.rindex("\n") + 1]
    return text


def detect_dialect(sample: str, delimiter: str | None) -> tuple[str, str]:
    """(delimiter, quotechar) of a CSV sample; a given delimiter wins."""
    first_line = sample.split("\n", 1)[0]
    quotechar = '"'
    sniffed: str | None = None
    try:
        dialect = csv.Sniffer().sniff(sample, delimiters=DELIMITERS)
        sniffed = dialect.delimiter
        if dialect.quotechar in ('"', "'") and dialect.quotechar in sample:
            quotechar = dialect.quotechar
    except csv.Error:
        pass
    if delimiter:
        return delimiter, quotechar
    if sniffed and sniffed in first_line:
        return sniffed, quotechar
    # The sniffer wants several consistent lines; the header alone usually tells.
    counts = {d: first_line.count(d) for d in DELIMITERS}
    best = max(counts, key=lambda d: counts[d])
    return (best if counts[best] > 0 else ","), quotechar


def check_header(record: list[str], limits: DataLimits) -> list[str]:
    """Column names from the header record: stripped, unique, empty ones named column_N."""
    names = [c.strip() for c in record]
    if not names or all(not c for c in names):
        raise DataError("the first row (the header) is empty", row=1)
    if len(names) > limits.max_columns:
        raise DataError(
            f"the file has {len(names)} columns; the limit is {limits.max_columns}", row=1
        )
    names = [c or f"column_{i + 1}" for i, c in enumerate(names)]
    seen: set[str] = set()
    for name in names:
        if name in seen:
            raise DataError("this column name appears twice in the header", row=1, column=name)
        seen.add(name)
    return names


def _header(sample: str, fmt_delimiter: str, quotechar: str) -> list[str]:
    reader = csv.reader(io.StringIO(sample), delimiter=fmt_delimiter, quotechar=quotechar)
    try:
        return next(reader)
    except StopIteration:
        return []
    except csv.Error as exc:
        raise DataError(f"not valid CSV: {exc}", row=1) from None


def _locate(path: str, fmt: CsvFormat, n_columns: int, cause: str) -> DataError:
    """The first bad record, named by row (Python's csv module, used only once a read failed)."""
    codec = "utf-8-sig" if fmt.encoding == "utf-8" else fmt.encoding
    hint = "; choose its encoding (latin-1 or utf-16)" if fmt.requested_encoding == "auto" else ""
    if fmt.encoding == "utf-8":
        # Decoding in blocks names the line and byte; the text reader below decodes ahead of the rows.
        bad = find_not_utf8(path)
        if bad is not None:
            return DataError(bad.message(hint), row=bad.row)
    row = 0
    try:
        with open(path, encoding=codec, newline="") as f:
            reader = csv.reader(f, delimiter=fmt.delimiter, quotechar=fmt.quotechar)
            for record in reader:
                row += 1
                if row == 1:
                    continue
                if not record or (len(record) == 1 and not record[0].strip() and n_columns > 1):
                    continue  # blank line
                if len(record) != n_columns:
                    return DataError(
                        f"has {len(record)} fields, expected {n_columns} (as in the header)",
                        row=row,
                    )
    except UnicodeDecodeError:
        return DataError(f"the file is not {fmt.encoding.upper()} text{hint}", row=row + 1)
    except csv.Error as exc:
        return DataError(f"not valid CSV: {exc}", row=row + 1)
    return DataError(f"not valid CSV: {cause}")


def _skip_blank(row: Any) -> str:
    # pyarrow calls this for a record with the wrong field count; a whitespace-only line is blank.
    return "skip" if row.actual_columns == 1 and not row.text.strip() else "error"


def _sniff(
    path: str, limits: DataLimits, *, delimiter: str | None, encoding: str, guess: bool
) -> tuple[CsvFormat, list[str]]:
    size = checked_file_size(path, limits)
    if size == 0:
        raise DataError("the file is empty")
    resolved, detected = resolve_encoding(path, encoding, guess=guess)
    sample = _sample_text(path, resolved)
    sep, quotechar = detect_dialect(sample, delimiter)
    fmt = CsvFormat(
        encoding=resolved,
        delimiter=sep,
        quotechar=quotechar,
        requested_encoding=encoding,
        requested_delimiter=delimiter,
        detected_encoding=detected,
        csv_size=size,
    )
    return fmt, check_header(_header(sample, sep, quotechar), limits)


def sniff_format(
    path: str,
    limits: DataLimits,
    *,
    delimiter: str | None = None,
    encoding: str = "auto",
    guess_encoding: bool = False,
) -> CsvFormat:
    """Encoding, delimiter and quote character of a CSV, from its first bytes (no full read)."""
    return _sniff(path, limits, delimiter=delimiter, encoding=encoding, guess=guess_encoding)[0]


@dataclass
class _Reader:
    fmt: CsvFormat
    names: list[str]
    schema: pa.Schema
    batches: Iterator[pa.RecordBatch]


def _open(
    path: str,
    limits: DataLimits,
    *,
    delimiter: str | None,
    encoding: str,
    guess_encoding: bool,
    progress: Progress | None,
) -> _Reader:
    fmt, names = _sniff(path, limits, delimiter=delimiter, encoding=encoding, guess=guess_encoding)
    size, resolved = fmt.csv_size, fmt.encoding
    sep, quotechar = fmt.delimiter, fmt.quotechar
    schema = pa.schema([pa.field(n, pa.string()) for n in names])

    def batches() -> Iterator[pa.RecordBatch]:
        source: BinaryIO = open(path, "rb")  # noqa: SIM115 - closed in the finally below
        rows = 0
        try:
            reader = pacsv.open_csv(
                source,
                read_options=pacsv.ReadOptions(
                    column_names=names,
                    skip_rows=1,
                    encoding="utf8" if resolved == "utf-8" else resolved,
                    block_size=BLOCK_BYTES,
                ),
                parse_options=pacsv.ParseOptions(
                    delimiter=sep,
                    quote_char=quotechar,
                    newlines_in_values=True,
                    invalid_row_handler=_skip_blank,
                ),
                convert_options=pacsv.ConvertOptions(
                    column_types=dict.fromkeys(names, pa.string()),
                    strings_can_be_null=False,
                    quoted_strings_can_be_null=False,
                ),
            )
            while True:
                try:
                    batch = reader.read_next_batch()
                except StopIteration:
                    break
                rows += batch.num_rows
                if rows > limits.max_rows:
                    raise DataError(
                        f"the file has more than {limits.max_rows} data rows (the limit)",
                        row=limits.max_rows + 2,
                    )
                yield pa.RecordBatch.from_arrays(
                    [pc.utf8_trim_whitespace(col) for col in batch.columns], schema=schema
                )
                if progress is not None:
                    progress(min(source.tell() / size, 1.0))
        except pa.ArrowInvalid as exc:
            raise _locate(path, fmt, len(names), str(exc)) from None
        finally:
            source.close()

    return _Reader(fmt, names, schema, batches())


def _meta(fmt: CsvFormat) -> dict[bytes, bytes]:
    # The row count is left out: the table knows it, and it is known only at the end.
    return {META_KEY: json.dumps({k: v for k, v in fmt.to_json().items() if k != "rows"}).encode()}


def read_csv_text(
    path: str,
    limits: DataLimits,
    *,
    delimiter: str | None = None,
    encoding: str = "auto",
    guess_encoding: bool = False,
    progress: Progress | None = None,
) -> tuple[pa.Table, CsvFormat]:
    """The whole CSV as a table of trimmed text columns, and how it was read."""
    reader = _open(
        path,
        limits,
        delimiter=delimiter,
        encoding=encoding,
        guess_encoding=guess_encoding,
        progress=progress,
    )
    table = pa.Table.from_batches(list(reader.batches), schema=reader.schema)
    fmt = CsvFormat(**{**reader.fmt.to_json(), "rows": table.num_rows})
    return table, fmt


def build_csv_table(
    path: str,
    dest: str | Path,
    limits: DataLimits,
    *,
    delimiter: str | None = None,
    encoding: str = "auto",
    guess_encoding: bool = False,
    progress: Progress | None = None,
) -> CsvFormat:
    """Stream the CSV into an Arrow IPC file at `dest` (atomically); returns how it was read."""
    reader = _open(
        path,
        limits,
        delimiter=delimiter,
        encoding=encoding,
        guess_encoding=guess_encoding,
        progress=progress,
    )
    rows = 0
    with atomic_file(dest) as tmp:
        with pa.ipc.new_file(
            str(tmp),
            reader.schema.with_metadata(_meta(reader.fmt)),
            options=pa.ipc.IpcWriteOptions(compression="lz4"),
        ) as sink:
            for batch in reader.batches:
                rows += batch.num_rows
                sink.write_batch(batch)
    if progress is not None:
        progress(1.0)
    return CsvFormat(**{**reader.fmt.to_json(), "rows": rows})


def table_format(path: str | Path) -> CsvFormat | None:
    """How the stored table at `path` was read, or None when it is missing or of another format."""
    try:
        with pa.memory_map(str(path)) as source:
            meta = pa.ipc.open_file(source).schema.metadata or {}
        fmt = json.loads(meta[META_KEY])
        if fmt.get("version") != TABLE_FORMAT:
            return None
        return CsvFormat(**fmt)
    except (OSError, KeyError, ValueError, TypeError, pa.ArrowException):
        return None


def read_table(path: str | Path) -> pa.Table:
    """The stored text table."""
    with pa.memory_map(str(path)) as source:
        return pa.ipc.open_file(source).read_all()


def table_matches(
    fmt: CsvFormat | None, csv_path: str, *, delimiter: str | None, encoding: str
) -> bool:
    """Whether a stored table stands for this CSV read with these options."""
    if fmt is None:
        return False
    try:
        size = Path(csv_path).stat().st_size
    except OSError:
        size = fmt.csv_size  # the original may be gone; the table is the record of it
    if fmt.csv_size != size:
        return False
    if delimiter and delimiter != fmt.delimiter:
        return False
    return encoding in ("auto", fmt.encoding) or encoding == fmt.requested_encoding
