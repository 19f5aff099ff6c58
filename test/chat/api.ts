/**
 * What the chat test's clients call on `ChatRoom` (worker.ts), as plain TypeScript: the Node test
 * imports this, never worker.ts, so no Workers type enters its program.
 */

import type { WithTopics } from "@dorpc/rpc";

/** One chat message as the `messages` topic carries it. */
export interface ChatMessage {
  /** The sender's identity (`?who=` on its connect URL). */
  from: string;
  text: string;
}

/** The room's topics and their event types. */
export interface ChatTopics {
  messages: ChatMessage;
}

/** The room's methods; `WithTopics` carries its topics to `subscribe(client, …)`. */
export interface ChatRoomApi extends WithTopics<ChatTopics> {
  /** Publishes `text` on `messages`, from the caller; returns the event's sequence number. */
  say(text: string): number;
  /** Answers nothing: a round trip, after which everything the object pushed before it has arrived. */
  ping(): void;
  /** Closes up to `count` random sockets other than the caller's (1011); returns how many. */
  dropOthers(count: number): number;
}
