// Which weights each figure of the run page is about. "Results" are the metrics at the end of
// training (the final weights); the downloads and the stored evaluation hold the checkpoint the
// default export names (`default` in the checkpoint list: `best` when the run kept one); any
// other kept checkpoint can be evaluated on request. Pure: tested in vitest.
import type { Checkpoint, Run } from "./types";

/** "best (epoch 2, step 80)", "epoch-0003 (epoch 3, step 120)". */
export function checkpointWords(c: Pick<Checkpoint, "name" | "epoch" | "step">): string {
  return `${c.name} (epoch ${Number.isInteger(c.epoch) ? c.epoch : c.epoch.toFixed(1)}, step ${c.step})`;
}

/** The checkpoint holding the weights training ended with: the last one at the run's last step. */
export function finalCheckpoint(run: Pick<Run, "progress">, checkpoints: Checkpoint[]): Checkpoint | null {
  const atEnd = checkpoints.filter((c) => c.available && c.step === run.progress.step);
  return atEnd.find((c) => c.kind !== "best") ?? atEnd[0] ?? null;
}

/** The checkpoint whose weights the downloads and the default evaluation hold, when known. */
export function defaultCheckpoint(checkpoints: Checkpoint[]): Checkpoint | null {
  return checkpoints.find((c) => c.default) ?? null;
}

/** The final weights in words: "the final weights (epoch 3, step 120)". */
export function finalWords(run: Pick<Run, "progress">): string {
  const { epoch, step } = run.progress;
  return `the final weights (epoch ${Number.isInteger(epoch) ? epoch : epoch.toFixed(1)}, step ${step})`;
}

/** True when the downloads hold other weights than the final ones (a best checkpoint before the end). */
export function exportIsNotFinal(run: Pick<Run, "progress">, checkpoints: Checkpoint[]): boolean {
  const held = defaultCheckpoint(checkpoints);
  return held !== null && held.step !== run.progress.step;
}

export interface CheckpointOption {
  /** "" asks for the stored evaluation (GET without ?checkpoint=); else the checkpoint's name. */
  value: string;
  label: string;
}

/** The evaluation panel's choices: the downloads' weights first, then every other kept checkpoint. */
export function checkpointOptions(run: Pick<Run, "progress">, checkpoints: Checkpoint[]): CheckpointOption[] {
  const held = defaultCheckpoint(checkpoints);
  // `best` saved at the last step holds the final weights too.
  const tag = (c: Checkpoint) => (c.step === run.progress.step ? ", the final weights" : "");
  const first: CheckpointOption = held ? { value: "", label: `${checkpointWords(held)}: the downloads' weights${tag(held)}` } : { value: "", label: `the trained model: ${finalWords(run)}` };
  const others = checkpoints
    .filter((c) => c.available && c.name !== held?.name)
    .slice()
    .reverse()
    .map((c) => ({ value: c.name, label: `${checkpointWords(c)}${tag(c)}` }));
  return [first, ...others];
}

/** The weights an evaluation answer is about, in words, for the line above its figures. */
export function evaluatedWords(choice: string, run: Pick<Run, "progress">, checkpoints: Checkpoint[]): string {
  const c = choice ? checkpoints.find((x) => x.name === choice) : defaultCheckpoint(checkpoints);
  if (!c) return finalWords(run);
  return `checkpoint ${checkpointWords(c)}`;
}
