// "Compare top N": the first N runs of the current filter and ordering side by side (/compare),
// taken from the rows the table holds, or fetched with page_size=N when it does not hold them all.
import { useState } from "react";
import { apiRequest } from "../../api/client";
import type { Page } from "../../api/types";
import { navigate } from "../../router";
import { COMPARE_MAX, COMPARE_MIN, type RunRow } from "../runsTable";

export interface CompareTopProps {
  count: number;
  /** The first runs of the order the table holds (up to `n`, stopping at the first it lacks). */
  leading: (n: number) => readonly RunRow[];
  /** The list's query string for the first `n` runs. */
  queryFor: (n: number) => string;
}

/** How many runs "compare the top N" opens unless told otherwise. */
export const COMPARE_TOP_DEFAULT = 10;

export function CompareTop({ count, leading, queryFor }: CompareTopProps) {
  const [typed, setTyped] = useState(String(COMPARE_TOP_DEFAULT));
  const [error, setError] = useState<string | null>(null);
  const n = Math.max(COMPARE_MIN, Math.min(COMPARE_MAX, Math.round(Number(typed)) || COMPARE_MIN));
  const take = Math.min(n, count);
  async function open() {
    try {
      const held = leading(take);
      const ids =
        held.length >= take
          ? held.map((r) => r.id)
          : (await apiRequest<Page<RunRow>>("GET", `/api/runs/?${queryFor(take)}`)).results.map((r) => r.id);
      navigate(`/compare?ids=${ids.join(",")}`);
    } catch (e) {
      setError((e as Error).message);
    }
  }
  return (
    <div className="compare-top row">
      <label>
        <input
          type="number"
          data-testid="compare-top-n"
          min={COMPARE_MIN}
          max={COMPARE_MAX}
          aria-label="How many runs to compare"
          value={typed}
          onChange={(e) => setTyped(e.target.value)}
        />
      </label>
      <button
        type="button"
        data-testid="compare-top"
        disabled={take < COMPARE_MIN}
        title={`Open the first ${take} runs of this order side by side`}
        onClick={() => void open()}
      >
        Compare top {take}
      </button>
      {error && (
        <span className="error" role="alert">
          {error}
        </span>
      )}
    </div>
  );
}
