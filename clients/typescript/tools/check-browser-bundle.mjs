// Bundles a module for browsers with esbuild (as a page's build would) and fails when a Node
// built-in module (`node:…`, or a bare name such as "http2") is reachable from it: the proof that
// the package's browser entry, `@gostop/client`, runs in a page.
//
//   node tools/check-browser-bundle.mjs ENTRY.js [ENTRY.js…]
//
// Prints, per entry, "browser bundle of ENTRY: N modules, N bytes, no Node built-in" and exits 0;
// otherwise prints each Node import (or esbuild's error) with the module that made it and exits 1.

import { builtinModules } from "node:module";

import { build } from "esbuild";

const BUILTINS = new Set(builtinModules.flatMap((name) => [name, `node:${name}`]));

/** The problems of bundling `entry` for browsers ([] when none), and its size. */
async function check(entry) {
  let result;
  try {
    result = await build({
      entryPoints: [entry],
      bundle: true,
      platform: "browser",
      format: "esm",
      target: "es2022",
      write: false,
      metafile: true,
      logLevel: "silent",
    });
  } catch (error) {
    const errors = error.errors ?? [{ text: String(error) }];
    return {
      problems: errors.map((e) => (e.location ? `${e.location.file}:${e.location.line}: ${e.text}` : e.text)),
    };
  }
  const problems = [];
  for (const [file, input] of Object.entries(result.metafile.inputs)) {
    for (const imported of input.imports) {
      if (imported.path.startsWith("node:") || BUILTINS.has(imported.path)) {
        problems.push(`${file} imports ${imported.path}`);
      }
    }
  }
  const modules = Object.keys(result.metafile.inputs).length;
  const bytes = result.outputFiles.reduce((sum, file) => sum + file.contents.length, 0);
  return { problems, modules, bytes };
}

const entries = process.argv.slice(2);
if (entries.length === 0) {
  console.error("usage: node tools/check-browser-bundle.mjs ENTRY.js [ENTRY.js…]");
  process.exit(2);
}
let failed = false;
for (const entry of entries) {
  const { problems, modules, bytes } = await check(entry);
  if (problems.length > 0) {
    failed = true;
    console.log(`browser bundle of ${entry} failed:`);
    for (const problem of problems) {
      console.log(`  ${problem}`);
    }
  } else {
    console.log(`browser bundle of ${entry}: ${modules} modules, ${bytes} bytes, no Node built-in`);
  }
}
process.exitCode = failed ? 1 : 0;
