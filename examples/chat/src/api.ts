/**
 * The room's API as plain TypeScript, shared by the Worker and the page. The page imports this
 * file, never worker.ts, so its tsconfig (DOM, no Workers types) stays clean; the class
 * `implements` these interfaces, so the two cannot drift apart.
 */
import type { WithTopics } from "@dorpc/rpc";

/** A chat message as the `messages` topic carries it. */
export interface ChatMessage {
  from: string;
  text: string;
  at: Date;
}

/** A message from the room's history, with its sequence number on the `messages` topic. */
export interface StoredMessage extends ChatMessage {
  seq: number;
}

/** The room's topics and their event types: events published there are stored and replayed. */
export interface RoomTopics {
  messages: ChatMessage;
}

/**
 * What the page calls on the room. `WithTopics` carries the topics `subscribe(room, …)` accepts
 * (the class declares them through `RpcDurableObject<Env, Client, Topics>`).
 */
export interface RoomApi extends WithTopics<RoomTopics> {
  /** Posts `text` as the caller; returns the message's sequence number. */
  say(text: string): number;
  /** The last `limit` messages, oldest first, and the newest sequence number (0: none yet). */
  history(limit?: number): { messages: StoredMessage[]; latest: number };
  /** Announces the caller: everyone connected is sent who is online now. */
  hello(): void;
}

/** What each page exposes to the room: the room calls it on every connected page at once. */
export interface ChatClient {
  /** Who is online now (everyone connected, sorted). */
  online(names: string[]): void;
}
