import { describe, expect, it } from "vitest";
import { historyLine, promoteBlocked } from "./ModelPage";

const move = { alias: "production", from_version: 1, to_version: 2, actor: "ed", approved_by: "alice", note: "faster", at: "" };

describe("the model page", () => {
  it("names who moved an alias and who approved it", () => {
    expect(historyLine(move)).toBe("ed moved production v1 → v2, approved by alice: faster");
    expect(historyLine({ ...move, from_version: null, approved_by: null, note: "" })).toBe("ed moved production to v2");
    expect(historyLine({ ...move, to_version: null, approved_by: null, note: "" })).toBe("ed dropped production (was v1)");
  });

  it("lets admins promote, and editors ask when the team wants approval", () => {
    expect(promoteBlocked("admin", false)).toBeNull();
    expect(promoteBlocked("editor", false)).toBe("Only a team admin moves production");
    expect(promoteBlocked("editor", true)).toBeNull();
    expect(promoteBlocked("viewer", true)).toBe("Only an editor or admin asks to move production");
  });
});
