// Issue 39: a group commit's spans with tracing on, in-process with the SDK's in-memory exporter. One
// commit answers many writes, so it is one BATCH span, under the first traced write's span and
// linked to the others'; each traced write's span marks the end of its wait with `batch started`.
import assert from 'node:assert/strict'
import { after, describe, test } from 'node:test'
import { context, trace } from '@opentelemetry/api'
import { InMemorySpanExporter, NodeTracerProvider, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-node'
import { GroupCommit } from '../../src/storage/group-commit.js'
import { useTracer } from '../../src/spans.js'

describe('group commit spans (tracing on)', () => {
  const exporter = new InMemorySpanExporter()
  const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  provider.register()
  const tracer = provider.getTracer('test')
  useTracer(tracer)
  after(async () => {
    useTracer(undefined)
    await provider.shutdown()
    trace.disable()
    context.disable()
  })

  test('When three traced writes and an untraced one share a batch, then one BATCH span goes under the first traced write, linked to the other two, with the batch size', async () => {
    exporter.reset()
    const batches: number[][] = []
    const commit = new GroupCommit<number, number>(
      (batch) => {
        batches.push(batch)
        return batch.map((n) => n * 10)
      },
      { dialect: 'postgres' },
    )
    // Submitted in one turn: one batch. Each traced write with a span of its own, as a request's stock write is.
    const writes = [1, 2, 3].map((n) => {
      const span = tracer.startSpan(`write ${n}`)
      return { span, answered: commit.submit(n, span) }
    })
    const untraced = commit.submit(4)
    assert.deepEqual(await Promise.all([...writes.map((w) => w.answered), untraced]), [10, 20, 30, 40])
    for (const w of writes) w.span.end()
    assert.deepEqual(batches, [[1, 2, 3, 4]])

    const finished = exporter.getFinishedSpans()
    const batch = finished.filter((s) => s.name === 'BATCH')
    assert.equal(batch.length, 1, 'one span for the one commit')
    const [first, second, third] = writes.map((w) => w.span.spanContext())
    assert.equal(batch[0]!.parentSpanContext?.spanId, first!.spanId)
    assert.deepEqual(
      batch[0]!.links.map((l) => l.context.spanId),
      [second!.spanId, third!.spanId],
    )
    assert.deepEqual(batch[0]!.attributes, {
      'db.system.name': 'postgresql',
      'db.operation.name': 'BATCH',
      'db.operation.batch.size': 4,
    })
    for (const name of ['write 1', 'write 2', 'write 3'])
      assert.deepEqual(
        finished.find((s) => s.name === name)!.events.map((e) => e.name),
        ['batch started'],
        name,
      )
  })

  test('When a batch fails, then its span says so with the error’s class, never its message', async () => {
    exporter.reset()
    const commit = new GroupCommit<number, number>(
      () => {
        throw new RangeError('secret value 42')
      },
      { dialect: 'sqlite' },
    )
    const span = tracer.startSpan('write')
    await assert.rejects(commit.submit(1, span), RangeError)
    span.end()
    const batch = exporter.getFinishedSpans().find((s) => s.name === 'BATCH')!
    assert.equal(batch.attributes['error.type'], 'RangeError')
    assert.equal(batch.status.code, 2)
    assert.ok(!JSON.stringify(batch.status).includes('secret'), 'no message')
  })

  test('When no write in a batch is traced, then no span is made', async () => {
    exporter.reset()
    const commit = new GroupCommit<number, number>((batch) => batch, { dialect: 'sqlite' })
    assert.deepEqual(await Promise.all([commit.submit(1), commit.submit(2)]), [1, 2])
    assert.deepEqual(exporter.getFinishedSpans(), [])
  })
})
