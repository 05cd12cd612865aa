import { createHook } from 'node:async_hooks'

/**
 * Keeps one of Node's own nextTick objects alive for the life of the process, so that the hidden
 * class (map) V8 gave those objects is never collected.
 *
 * Why: process.nextTick builds each tick as an object literal with computed keys, and V8's feedback
 * for such a key goes megamorphic as soon as it sees a second map, never to come back. When a full
 * collection runs while no tick object is alive, the map after the first key is collected, the next
 * tick makes a new one, and from then on every nextTick takes V8's slow generic path. The service's
 * start (many modules, a major collection) made that happen on every start: a request makes about
 * six nextTicks (Node's streams and HTTP response), and the slow path cost 1.9 µs of CPU per request
 * (perf with V8's jitdump, three runs each of this build and of one where it did not happen). One
 * live tick object keeps the map, and the feedback stays monomorphic (checked with %DebugPrint of
 * process.nextTick's feedback vector).
 *
 * The async hook that catches the object is enabled only for the one nextTick below.
 */
let kept: object | undefined
const hook = createHook({
  init(_asyncId, type, _triggerAsyncId, resource) {
    if (type === 'TickObject') kept ??= resource
  },
})
hook.enable()
process.nextTick(() => {})
hook.disable()

/** The tick object held (for the unit test); undefined if Node stopped reporting TickObjects to init hooks. */
export function keptTickObject(): object | undefined {
  return kept
}
