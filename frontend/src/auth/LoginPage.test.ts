import { describe, expect, it } from "vitest";
import { ssoErrorMessage } from "./LoginPage";

describe("the sign-in page's single sign-on messages", () => {
  it("says what each failure means, naming the provider", () => {
    expect(ssoErrorMessage("sso_unavailable", "Keycloak")).toMatch(/^Keycloak could not be reached/);
    expect(ssoErrorMessage("sso_no_account", "Keycloak")).toContain("ask a team admin to invite you");
    expect(ssoErrorMessage("sso_denied", "Keycloak")).toContain("Keycloak did not let you in");
    expect(ssoErrorMessage("sso_state", "Keycloak")).toContain("expired or was already used");
    expect(ssoErrorMessage("sso_inactive", "Keycloak")).toContain("disabled");
  });

  it("has a sentence for a code it does not know", () => {
    expect(ssoErrorMessage("sso_failed", "SSO")).toContain("Signing in with SSO failed");
    expect(ssoErrorMessage("<script>", "SSO")).toContain("Signing in with SSO failed");
  });
});
