// Small pieces every page uses, so they look and read the same everywhere.

/** What went wrong, announced to screen readers as it appears. */
export function Problem({ text }: { text: string | undefined }) {
  return text ? (
    <p role="alert" class="problem">
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
