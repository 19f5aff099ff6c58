/**
 * dorpc through a hand-written Worker route (/direct/COUNTER/<instance> →
 * env.COUNTER.getByName(instance).fetch(…)): the routing scenario's baseline for routeDORequest.
 */
import { dorpcContender } from "./dorpc.js";

export const dorpcDirect = dorpcContender("dorpc-direct", "dorpc (hand-written route, /direct/COUNTER/<instance>)", { prefix: "/direct" });
