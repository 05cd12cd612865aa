// Bundles the console (console/src, Preact and petstore-client from npm) with esbuild into
// dist/console: index.html and assets named by their content's hash, so the service can let
// browsers keep the assets for a year and still never serve a stale one.
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { basename } from 'node:path'
import { build } from 'esbuild'

const out = 'dist/console'
const result = await build({
  entryPoints: ['console/src/main.tsx'],
  bundle: true,
  format: 'esm',
  target: ['es2022'],
  minify: true,
  sourcemap: false,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  entryNames: '[name]-[hash]',
  outdir: `${out}/assets`,
  metafile: true,
  legalComments: 'none',
  logLevel: 'warning',
})
const outputs = Object.keys(result.metafile.outputs).map((file) => basename(file))
const js = outputs.find((f) => f.endsWith('.js'))
const css = outputs.find((f) => f.endsWith('.css'))
if (!js || !css) throw new Error(`the console build wrote ${outputs.join(', ')}: expected one .js and one .css`)
mkdirSync(out, { recursive: true })
writeFileSync(`${out}/index.html`, readFileSync('console/index.html', 'utf8').replace('{{js}}', js).replace('{{css}}', css))
