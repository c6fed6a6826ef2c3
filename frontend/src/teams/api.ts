// REST calls of a team's members and invitations, an invitation's accept page, and the profile
// (own password and tokens). Types are the generated ones (api.gen.ts).
import type { components } from "../api/api.gen";
import { apiRequest, resultsOf } from "../api/client";
import type { Page, Role } from "../api/types";

export type TeamDetail = components["schemas"]["TeamDetail"];
export type Member = components["schemas"]["Member"];
export type Invitation = components["schemas"]["Invitation"];
export type NewInvitation = components["schemas"]["NewInvitation"];
export type InvitationPublic = components["schemas"]["InvitationPublic"];
export type Accepted = components["schemas"]["Accepted"];
export type ApiToken = components["schemas"]["ApiToken"];

export const ROLES: Role[] = ["viewer", "editor", "admin"];

export const teamsApi = {
  team: (id: number) => apiRequest<TeamDetail>("GET", `/api/teams/${id}/`),
  invitations: (team: number) => apiRequest<Invitation[]>("GET", `/api/teams/${team}/invitations/`),
  invite: (team: number, who: string, role: Role) =>
    apiRequest<NewInvitation>("POST", `/api/teams/${team}/invitations/`, { ...inviteTarget(who), role }),
  revoke: (team: number, invitation: number) => apiRequest<void>("DELETE", `/api/teams/${team}/invitations/${invitation}/`),
  setRole: (team: number, user: number, role: Role) => apiRequest<Member>("PATCH", `/api/teams/${team}/members/${user}/`, { role }),
  remove: (team: number, user: number) => apiRequest<void>("DELETE", `/api/teams/${team}/members/${user}/`),
  invitation: (token: string) => apiRequest<InvitationPublic>("GET", `/api/invitations/${encodeURIComponent(token)}/`),
  accept: (token: string, account?: { username: string; password: string }) =>
    apiRequest<Accepted>("POST", `/api/invitations/${encodeURIComponent(token)}/accept/`, account ?? {}),
  changePassword: (old_password: string, new_password: string) =>
    apiRequest<void>("POST", "/api/auth/password/", { old_password, new_password }),
  tokens: async () => resultsOf(await apiRequest<Page<ApiToken> | ApiToken[]>("GET", "/api/auth/tokens/?page_size=200")),
  revokeToken: (id: number) => apiRequest<void>("DELETE", `/api/auth/tokens/${id}/`),
};

/** An invite box takes an e-mail address or a username: which field of the body it fills. */
export function inviteTarget(who: string): { email: string } | { username: string } {
  const text = who.trim();
  return text.includes("@") ? { email: text } : { username: text };
}

/** Whether changing `member` to `role` (or removing them, role null) would leave the team no admin. */
export function leavesNoAdmin(members: Member[], member: Member, role: Role | null): boolean {
  if (member.role !== "admin" || role === "admin") return false;
  return members.filter((m) => m.role === "admin" && m.id !== member.id).length === 0;
}

/** A token's state in words: live, revoked, or expired. */
export function tokenState(token: ApiToken, now: Date = new Date()): "live" | "revoked" | "expired" {
  if (token.revoked_at) return "revoked";
  if (token.expires_at && new Date(token.expires_at) <= now) return "expired";
  return "live";
}
