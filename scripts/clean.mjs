// Builds start from an empty dist/, so a deleted or renamed source or test never lingers there.
import { rmSync } from 'node:fs'

rmSync('dist', { recursive: true, force: true })
rmSync('client/dist', { recursive: true, force: true })
