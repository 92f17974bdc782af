// undici for the conformance CLI (hooks.mjs): its request sends Authorization: Bearer
// $TOOLGATE_TOKEN, as preload.mjs's fetch does.
import { request as send } from "undici";

export * from "undici";

const token = process.env.TOOLGATE_TOKEN;
export const request = (url, options = {}) =>
  send(url, token ? { ...options, headers: { authorization: `Bearer ${token}`, ...options.headers } } : options);
