// The connection to a graph's room: a y-websocket provider on /ws/graphs/<id>/collab (session
// cookie auth), its status in words the page shows, presence (awareness) of this client, and what
// the server refused. Edits made while offline stay in the Y.Doc and go out on reconnect.
import { WebsocketProvider } from "y-websocket";
import * as Y from "yjs";
import type { Awareness } from "y-protocols/awareness";
import * as authProtocol from "y-protocols/auth";

export type RoomStatus = "connecting" | "online" | "offline";

/** Why the room will not open again on its own (the server closed it with 4401 / 4403). */
export interface RoomClosed {
  code: number;
  message: string;
}

/** How often this client says it is still here, and how long a silent one still counts as present. */
export const HEARTBEAT_MS = 2000;
export const PRESENT_MS = 7000;

/** y-websocket's auth message type (y-protocols/auth: a permission-denied reason). */
const MESSAGE_AUTH = 2;

function wsOrigin(): string {
  return `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}`;
}

export class Room {
  readonly doc = new Y.Doc();
  readonly provider: WebsocketProvider;
  status: RoomStatus = "connecting";
  synced = false;
  closed: RoomClosed | null = null;
  /** The server refused an edit (a viewer's): its reason. */
  refused: string | null = null;
  private listeners = new Set<() => void>();
  private heartbeat: number;

  constructor(
    readonly graphId: number,
    origin: string = wsOrigin(),
  ) {
    // No BroadcastChannel: every edit goes through the server, which checks who may write.
    this.provider = new WebsocketProvider(`${origin}/ws/graphs/${graphId}`, "collab", this.doc, { disableBc: true, maxBackoffTime: 2000 });
    this.provider.on("status", ({ status }) => {
      this.status = status === "connected" ? "online" : status === "connecting" ? "connecting" : "offline";
      this.changed();
    });
    this.provider.on("sync", (synced: boolean) => {
      if (synced) this.synced = true;
      this.changed();
    });
    this.provider.on("closed", ({ code, reason }) => {
      this.closed = {
        code,
        message: code === 4403 ? "You are not a member of this graph's team." : code === 4401 ? "Your session has ended: sign in again." : reason || `The shared canvas closed (${code}).`,
      };
      this.status = "offline";
      this.changed();
    });
    this.provider.messageHandlers[MESSAGE_AUTH] = (_encoder, decoder) => {
      authProtocol.readAuthMessage(decoder, this.doc, (_doc, reason) => {
        this.refused = reason || "read-only";
        this.changed();
      });
    };
    // The browser knows before the socket does: go offline at once, and back when the network is.
    window.addEventListener("offline", this.onOffline);
    window.addEventListener("online", this.onOnline);
    this.heartbeat = window.setInterval(() => {
      const state = this.awareness.getLocalState();
      if (state) this.awareness.setLocalState(state);
    }, HEARTBEAT_MS);
  }

  get awareness(): Awareness {
    return this.provider.awareness;
  }

  private onOffline = () => this.provider.disconnect();
  private onOnline = () => this.provider.connect();

  subscribe = (listener: () => void): (() => void) => {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  };

  private changed(): void {
    for (const l of this.listeners) l();
  }

  destroy(): void {
    window.clearInterval(this.heartbeat);
    window.removeEventListener("offline", this.onOffline);
    window.removeEventListener("online", this.onOnline);
    this.provider.destroy();
    this.doc.destroy();
  }
}
