// Small pieces every page uses, so they look and read the same everywhere.
import { useEffect, useMemo, useState } from 'preact/hooks'
import { describeProblem, mayPass } from './problems.js'

/** What went wrong, announced to screen readers as it appears; with `onRetry`, a button to read again. */
export function Problem({ text, onRetry }: { text: string | undefined; onRetry?: (() => void) | undefined }) {
  if (!text) return null
  return (
    <>
      <p role="alert" class="problem">
        {text}
      </p>
      {onRetry && (
        <button type="button" class="retry" onClick={onRetry}>
          Try again
        </button>
      )}
    </>
  )
}

/**
 * What an action just did, announced politely; focus comes here when the action took away the
 * element that had it (useFocusRescue).
 */
export function Notice({ text }: { text: string | undefined }) {
  return text ? (
    <p role="status" class="hint" data-focus-rescue>
      {text}
    </p>
  ) : null
}

/** Previous and next over a listing read a page at a time. */
export function Pager(props: { page: number; hasNext: boolean; onPrevious: () => void; onNext: () => void }) {
  return (
    <div class="pager">
      <button type="button" disabled={props.page <= 1} onClick={props.onPrevious}>
        Previous page
      </button>
      <span>Page {props.page}</span>
      <button type="button" disabled={!props.hasNext} onClick={props.onNext}>
        Next page
      </button>
    </div>
  )
}

/**
 * Reads what a page shows: again whenever `deps` change or `reload()` is called, the previous read
 * cancelled. `busy` is true from the very render that asks until that read is in, so a table never
 * passes off old rows as new ones. A read that fails leaves its problem in words, and nothing shown
 * (rows from before would pass for the answer); `retry` reads again, present when the failure may
 * pass (the service unreachable or unavailable). `update` changes what was read in place (a change
 * that arrived live).
 */
export function useRead<T>(read: (signal: AbortSignal) => Promise<T>, deps: unknown[]) {
  const [count, setCount] = useState(0)
  const request = useMemo(() => ({}), [...deps, count])
  const [loaded, setLoaded] = useState<object>()
  const [value, setValue] = useState<T | undefined>()
  const [problem, setProblem] = useState<string | undefined>()
  const [passing, setPassing] = useState(false)
  useEffect(() => {
    const controller = new AbortController()
    read(controller.signal)
      .then((result) => {
        setValue(result)
        setProblem(undefined)
      })
      .catch((error) => {
        if (controller.signal.aborted) return
        setValue(undefined)
        setProblem(describeProblem(error))
        setPassing(mayPass(error))
      })
      .finally(() => controller.signal.aborted || setLoaded(request))
    return () => controller.abort()
  }, [request])
  const update = (change: (value: T) => T) => setValue((read) => (read === undefined ? read : change(read)))
  const reload = () => setCount((n) => n + 1)
  return { value, problem, busy: loaded !== request, reload, retry: problem !== undefined && passing ? reload : undefined, update }
}
