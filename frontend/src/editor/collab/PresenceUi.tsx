// What the others look like on a shared canvas: their avatars and the connection's state in the top
// bar, their pointers on the canvas (flow coordinates, so they stay on the node they point at), the
// nodes they selected outlined in their colour, and "X is editing fc1's out_features" in the inspector.
import { ViewportPortal } from "@xyflow/react";
import { memo } from "react";
import type { CanvasNode } from "../model";
import { type Peer, type PresenceUser, peopleOf } from "./presence";
import type { RoomStatus } from "./room";

function initials(name: string): string {
  const parts = name.split(/[\s._-]+/).filter(Boolean);
  const letters = parts.length > 1 ? parts[0][0] + parts[1][0] : name.slice(0, 2);
  return letters.toUpperCase();
}

/** Avatars shown one by one; the rest are one "+N" whose label names them. */
const SHOWN = 6;

export const Avatars = memo(function Avatars({ me, peers }: { me: PresenceUser | null; peers: Peer[] }) {
  const everyone = peopleOf(peers);
  const people = everyone.length > SHOWN ? everyone.slice(0, SHOWN - 1) : everyone;
  const more = everyone.slice(people.length);
  return (
    <ul className="presence-avatars" aria-label="On this graph" data-testid="presence">
      {me && (
        <li className="presence-avatar me" style={{ background: me.color }} title={`${me.username} (you)`} aria-label={`${me.username} (you)`} data-testid="presence-me">
          {initials(me.username)}
        </li>
      )}
      {people.map((u) => (
        <li key={u.id} className="presence-avatar" style={{ background: u.color }} title={u.username} aria-label={u.username} data-testid="presence-avatar" data-username={u.username}>
          {initials(u.username)}
        </li>
      ))}
      {more.length > 0 && (
        <li className="presence-avatar more" title={more.map((u) => u.username).join(", ")} aria-label={`and ${more.map((u) => u.username).join(", ")}`} data-testid="presence-more">
          +{more.length}
        </li>
      )}
    </ul>
  );
});

const STATUS_TEXT: Record<RoomStatus, string> = {
  online: "Live",
  connecting: "Connecting…",
  offline: "Offline — your edits are kept and merge when you reconnect",
};

export function ConnectionBadge({ status }: { status: RoomStatus }) {
  return (
    <span className={`collab-status ${status}`} data-testid="collab-status" data-status={status} role="status" title={STATUS_TEXT[status]}>
      {status === "offline" ? "Offline" : STATUS_TEXT[status]}
      {status === "offline" && <span className="sr-only">: your edits are kept and merge when you reconnect</span>}
    </span>
  );
}

/** The others' pointers, drawn in flow coordinates inside React Flow's viewport. */
export const RemoteCursors = memo(function RemoteCursors({ peers }: { peers: Peer[] }) {
  return (
    <ViewportPortal>
      {peers
        .filter((p) => p.cursor)
        .map((p) => (
          <div
            key={p.clientId}
            className="remote-cursor"
            data-testid="remote-cursor"
            data-username={p.user.username}
            style={{ transform: `translate(${p.cursor!.x}px, ${p.cursor!.y}px)`, color: p.user.color }}
            aria-hidden="true"
          >
            <svg width="14" height="20" viewBox="0 0 14 20">
              <path d="M0 0 L0 16 L4 12 L7 19 L10 18 L7 11 L13 11 Z" fill="currentColor" stroke="#fff" strokeWidth="1" />
            </svg>
            <span className="remote-cursor-name" style={{ background: p.user.color }}>
              {p.user.username}
            </span>
          </div>
        ))}
    </ViewportPortal>
  );
});

/**
 * The canvas's nodes with the others' presence on them: a node someone selected carries their
 * colour; a node someone is dragging is drawn where they hold it (unless this person drags it too).
 */
export function withPresence(nodes: CanvasNode[], peers: Peer[]): CanvasNode[] {
  if (peers.length === 0) return nodes;
  const selectedBy = new Map<string, Peer[]>();
  const dragged = new Map<string, { x: number; y: number }>();
  for (const p of peers) {
    for (const id of p.selection) selectedBy.set(id, [...(selectedBy.get(id) ?? []), p]);
    if (p.dragging) dragged.set(p.dragging.id, { x: p.dragging.x, y: p.dragging.y });
  }
  if (selectedBy.size === 0 && dragged.size === 0) return nodes;
  return nodes.map((n) => {
    const by = selectedBy.get(n.id);
    const at = n.dragging ? undefined : dragged.get(n.id);
    if (!by && !at) return n;
    const next = { ...n } as CanvasNode;
    if (at) next.position = at;
    if (by) {
      next.className = "peer-selected";
      next.style = { ...(n.style ?? {}), "--peer-color": by[0].user.color } as React.CSSProperties;
      next.domAttributes = { "data-selected-by": by.map((p) => p.user.username).join(" ") } as CanvasNode["domAttributes"];
    }
    return next;
  });
}

/** "bob is editing fc1's out_features" for each other person in a field of this node. */
export function EditingNotes({ peers, node }: { peers: Peer[]; node: string }) {
  const here = peers.filter((p) => p.editing && p.editing.node === node);
  if (here.length === 0) return null;
  return (
    <div className="presence-editing" data-testid="presence-editing">
      {here.map((p) => (
        <p key={p.clientId} role="status">
          <span className="presence-dot" style={{ background: p.user.color }} aria-hidden="true" />
          {p.user.username} is editing {node}'s {p.editing!.param}
        </p>
      ))}
    </div>
  );
}
