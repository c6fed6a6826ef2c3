// Node ids: Python identifiers, readable (`linear_1`), never reused within a graph.
const PY_KEYWORDS = new Set(
  "False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield".split(
    " ",
  ),
);

export function isPythonIdentifier(name: string): boolean {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name) && !PY_KEYWORDS.has(name);
}

/** `BatchNorm2d` -> `batchnorm2d`, `Conv2d` -> `conv2d`. */
export function idBase(op: string): string {
  let base = op.toLowerCase().replace(/[^a-z0-9_]+/g, "_").replace(/^_+|_+$/g, "");
  if (!base) base = "node";
  if (/^[0-9]/.test(base)) base = `n_${base}`;
  return base;
}

/**
 * On a shared canvas every client tags the ids it makes (its Y.Doc clientID in base 36), so two
 * people adding a ReLU at the same moment make `relu_1_k3f9a` and `relu_1_2bx0q`, never one id twice.
 */
let sharedTag: string | null = null;

export function setIdTag(tag: string | null): void {
  sharedTag = tag;
}

/** Smallest `<base>_<n>` (n >= 1) not in `taken`; `<base>_<n>_<tag>` on a shared canvas. */
export function nextId(base: string, taken: Set<string>, tag: string | null = sharedTag): string {
  for (let n = 1; ; n++) {
    const id = tag ? `${base}_${n}_${tag}` : `${base}_${n}`;
    if (!taken.has(id)) return id;
  }
}
