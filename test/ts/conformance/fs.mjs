// node:fs for the conformance CLI on Node 20 (hooks.mjs): with the globSync it imports, which
// only its tier-check command calls.
import fs from "node:fs";

export * from "node:fs";
export default fs;
export const globSync = () => {
  throw new Error("fs.globSync needs Node 22");
};
