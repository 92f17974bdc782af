// Module resolution hooks (registered by preload.mjs): the conformance CLI's own "undici" and,
// on Node 20, its "fs" are this directory's wrappers of them.
import fs from "node:fs";

const wrappers = { undici: "./undici.mjs" };
if (!fs.globSync) wrappers.fs = wrappers["node:fs"] = "./fs.mjs";

export async function resolve(specifier, context, next) {
  const wrapper = wrappers[specifier];
  if (wrapper && context.parentURL?.includes("/node_modules/@modelcontextprotocol/conformance/")) {
    return { url: new URL(wrapper, import.meta.url).href, shortCircuit: true };
  }
  return next(specifier, context);
}
