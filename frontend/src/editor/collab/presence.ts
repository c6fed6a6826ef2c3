// Presence: who else is on the graph, where their pointer is, what they selected, which field they
// are typing in and which node they are dragging. It travels over awareness (y-protocols), never in
// the document; a client silent for PRESENT_MS no longer counts as present.
import { createContext, useContext, useEffect, useState } from "react";
import type { Awareness } from "y-protocols/awareness";
import { PRESENT_MS } from "./room";

export interface PresenceUser {
  id: number;
  username: string;
  color: string;
}

export interface PresenceState {
  user: PresenceUser;
  /** Flow coordinates; null when the pointer is off the canvas. */
  cursor: { x: number; y: number } | null;
  selection: string[];
  editing: { node: string; param: string } | null;
  dragging: { id: string; x: number; y: number } | null;
}

export interface Peer extends PresenceState {
  clientId: number;
}

/**
 * Colours that differ from the editor's own selection blue, each dark enough for white 11px text
 * (contrast >= 4.5:1: avatars and pointer labels pass axe's color-contrast rule).
 */
const COLORS = ["#b8420c", "#1f7a33", "#862e9c", "#c2255c", "#0a6573", "#9c5200", "#5f3dc4", "#a61e4d"];

export function colorFor(userId: number): string {
  return COLORS[Math.abs(userId) % COLORS.length];
}

/** The others on the graph (one entry per browser tab), freshest first. */
export function peersOf(awareness: Awareness, now: number = Date.now()): Peer[] {
  const peers: Peer[] = [];
  for (const [clientId, state] of awareness.getStates()) {
    if (clientId === awareness.clientID) continue;
    const s = state as Partial<PresenceState>;
    if (!s.user || typeof s.user.username !== "string") continue;
    const seen = awareness.meta.get(clientId)?.lastUpdated ?? 0;
    if (now - seen > PRESENT_MS) continue;
    peers.push({ clientId, user: s.user, cursor: s.cursor ?? null, selection: Array.isArray(s.selection) ? s.selection : [], editing: s.editing ?? null, dragging: s.dragging ?? null });
  }
  return peers.sort((a, b) => a.user.username.localeCompare(b.user.username) || a.clientId - b.clientId);
}

/** The others, one per person (a person with two tabs shows once). */
export function peopleOf(peers: Peer[]): PresenceUser[] {
  const seen = new Map<number, PresenceUser>();
  for (const p of peers) if (!seen.has(p.user.id)) seen.set(p.user.id, p.user);
  return [...seen.values()];
}

/** Re-reads the peers on every awareness change, and every second so a silent one drops out. */
export function usePeers(awareness: Awareness | null): Peer[] {
  const [peers, setPeers] = useState<Peer[]>([]);
  useEffect(() => {
    if (!awareness) return;
    let last = "";
    const read = () => {
      const next = peersOf(awareness);
      const key = JSON.stringify(next);
      if (key === last) return;
      last = key;
      setPeers(next);
    };
    read();
    awareness.on("change", read);
    const timer = window.setInterval(read, 1000);
    return () => {
      awareness.off("change", read);
      window.clearInterval(timer);
    };
  }, [awareness]);
  return peers;
}

export interface PresenceApi {
  peers: Peer[];
  /** Sets one field of this client's presence. */
  set: <K extends keyof PresenceState>(key: K, value: PresenceState[K]) => void;
}

export const PresenceContext = createContext<PresenceApi | null>(null);
export const usePresence = () => useContext(PresenceContext);
