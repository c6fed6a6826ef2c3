// A real OpenID Provider for the single sign-on tests: panva's oidc-provider (OpenID Certified),
// with its development login and consent pages (any password is accepted for a known login).
//
// Environment:
//   PORT                   where it listens on 127.0.0.1 (the issuer is http://127.0.0.1:<PORT>)
//   OIDC_CLIENT_ID         the one client (Netloom) ...
//   OIDC_CLIENT_SECRET     ... its secret
//   OIDC_REDIRECT_URI      ... and where it may send the browser back (Netloom's /auth/oidc/callback/)
//   OIDC_USERS_FILE        a JSON file {"<login>": {"email", "name", "groups": [...]}}, read at every
//                          look-up, so a test changes a person's groups between two sign-ins
//
// Prints "oidc-provider listening on <issuer>" once it answers.
import { generateKeyPairSync, randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";

import Provider from "oidc-provider";

const port = Number(process.env.PORT || 0);
const issuer = `http://127.0.0.1:${port}`;
const usersFile = process.env.OIDC_USERS_FILE;
for (const name of ["PORT", "OIDC_CLIENT_ID", "OIDC_CLIENT_SECRET", "OIDC_REDIRECT_URI", "OIDC_USERS_FILE"]) {
  if (!process.env[name]) {
    console.error(`provider.mjs: ${name} is not set`);
    process.exit(2);
  }
}

function users() {
  return JSON.parse(readFileSync(usersFile, "utf8"));
}

// A signing key of its own for this run (nothing written to disk).
const { privateKey } = generateKeyPairSync("rsa", { modulusLength: 2048 });
const signingKey = { ...privateKey.export({ format: "jwk" }), use: "sig", alg: "RS256", kid: "test-rs256" };

const provider = new Provider(issuer, {
  clients: [
    {
      client_id: process.env.OIDC_CLIENT_ID,
      client_secret: process.env.OIDC_CLIENT_SECRET,
      redirect_uris: [process.env.OIDC_REDIRECT_URI],
      grant_types: ["authorization_code"],
      response_types: ["code"],
    },
  ],
  // Claims by scope: a scope named here is offered (discovery's scopes_supported).
  claims: {
    openid: ["sub"],
    email: ["email", "email_verified"],
    profile: ["name", "preferred_username", "given_name", "family_name"],
    groups: ["groups"],
  },
  async findAccount(ctx, id) {
    const person = users()[id];
    if (!person) return undefined;
    return {
      accountId: id,
      async claims() {
        // Read again here: the groups are those of this moment.
        const now = users()[id] || person;
        return {
          sub: id,
          email: now.email,
          email_verified: true,
          name: now.name,
          preferred_username: id,
          groups: now.groups || [],
        };
      },
    };
  },
  jwks: { keys: [signingKey] },
  cookies: { keys: [randomBytes(32).toString("hex")] },
  pkce: { required: () => true },
  features: { devInteractions: { enabled: true } },
});

// The development pages log a warning per request; the tests read the provider's log on failure.
const server = provider.listen(port, "127.0.0.1", () => {
  console.log(`oidc-provider listening on ${issuer}`);
});
process.on("SIGTERM", () => server.close(() => process.exit(0)));
