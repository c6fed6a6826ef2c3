import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { JobProgress } from "./JobProgress";
import { jobView } from "./jobState";

const html = (el: React.ReactElement) => renderToStaticMarkup(el);

describe("the job progress component", () => {
  it("draws a determinate bar with its percentage while working", () => {
    const out = html(<JobProgress view={jobView("working", 0.424)} testid="p" barTestid="bar" barLabel="Reading" />);
    expect(out).toContain('data-phase="working"');
    expect(out).toContain("Working… 42%");
    expect(out).toMatch(/<progress[^>]*aria-valuenow="42"/);
    expect(out).toMatch(/<progress[^>]*value="42"/);
    expect(out).toContain('aria-label="Reading"');
  });

  it("draws an indeterminate bar while waiting or when the work reports no figure", () => {
    for (const view of [jobView("waiting"), jobView("working")]) {
      const out = html(<JobProgress view={view} />);
      expect(out).toMatch(/<progress[^>]*>/);
      expect(out).not.toContain("aria-valuenow");
      expect(out).not.toMatch(/<progress[^>]*value=/);
    }
  });

  it("shows the error when failed and no bar once finished", () => {
    const failed = html(<JobProgress view={jobView("failed", null, "disk full")} errorTestid="err" />);
    expect(failed).toContain("Failed:");
    expect(failed).toMatch(/data-testid="err"[^>]*>disk full</);
    expect(failed).not.toContain("<progress");
    const done = html(<JobProgress view={jobView("done")} />);
    expect(done).toContain("Done");
    expect(done).not.toContain("<progress");
    expect(html(<JobProgress view={jobView("done")} quietWhenDone />)).not.toContain("Done");
  });

  it("keeps the domain's status word as a badge, which then says done and failed", () => {
    const ready = html(<JobProgress view={jobView("done")} badge="ready" badgeTestid="dataset-status" />);
    expect(ready).toMatch(/class="badge badge-ready" data-testid="dataset-status">ready</);
    expect(ready).not.toContain("Done");
    const processing = html(<JobProgress view={jobView("working", 0.5)} badge="processing" />);
    expect(processing).toContain(">processing<");
    expect(processing).toContain("Working… 50%");
  });

  it("names the work and adds detail while it runs", () => {
    const out = html(<JobProgress view={jobView("working", 0.5)} what="Upload" detail="1 MB of 2 MB" />);
    expect(out).toContain("Upload: Working… 50%");
    expect(out).toContain("(1 MB of 2 MB)");
  });
});
