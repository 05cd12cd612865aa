#!/usr/bin/env node
// The `petstore` command: the commands themselves are in src/cli/, which a test can also run in-process.
// First, before any other module runs: see tick-shape.ts.
import './tick-shape.js'
import { runCli } from './cli/run.js'

process.exitCode = await runCli(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr })
