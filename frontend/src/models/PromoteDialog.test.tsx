import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";
import { PromoteDialog } from "./PromoteDialog";
import type { ModelVersion } from "./api";

const version = (number: number, metrics: Record<string, number>): ModelVersion => ({
  number, metrics, source: { run: number }, note: "", formats: {}, files: [], aliases: [], created_by: null, created_at: "",
});
const noop = () => undefined;
const never = () => Promise.reject(new Error("not called"));

describe("the promote dialog", () => {
  it("shows each metric of production and of this version, the change and the verdict", () => {
    const html = renderToStaticMarkup(
      <PromoteDialog
        version={version(2, { "val/accuracy": 0.96, "val/loss": 0.31 })}
        production={version(1, { "val/accuracy": 0.9, "val/loss": 0.25 })}
        needsApproval={false}
        promote={never}
        onDone={noop}
        onCancel={noop}
      />,
    );
    expect(html).toContain("Promote v2 to production (replacing v1)");
    expect(html).toContain("v1 (now)");
    expect(html).toMatch(/val\/accuracy<\/td><td>0.9000<\/td><td>0.9600<\/td><td>\+0.0600<\/td><td class="verdict verdict-better">better/);
    expect(html).toMatch(/val\/loss<\/td><td>0.2500<\/td><td>0.3100<\/td><td>\+0.0600<\/td><td class="verdict verdict-worse">worse/);
    expect(html).toContain(">Promote</button>");
    expect(html).not.toContain("second admin");
  });

  it("files a request instead when the team asks for approval, and says so", () => {
    const html = renderToStaticMarkup(
      <PromoteDialog version={version(1, { "val/f1": 0.5 })} production={null} needsApproval promote={never} onDone={noop} onCancel={noop} />,
    );
    expect(html).toContain("Promote v1 to production</h2>");
    expect(html).toContain("a second admin to approve production moves");
    expect(html).toContain(">Ask for approval</button>");
    expect(html).toMatch(/val\/f1<\/td><td>–<\/td><td>0.5000<\/td><td>–<\/td>/);
  });
});
