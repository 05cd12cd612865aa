import type { RefObject } from 'preact'
import { useEffect } from 'preact/hooks'

/**
 * Keeps a keyboard user's place. When the focused element goes away under them (a revoked key's row,
 * an Approve button replaced by Deliver, a button disabled while its work runs), the browser drops
 * focus to the document, and the next Tab starts again at the top. Then focus goes to the page's
 * notice of what just happened (`data-focus-rescue`), or else its heading.
 */
export function useFocusRescue(root: RefObject<HTMLElement>, active: boolean): void {
  useEffect(() => {
    const area = root.current
    if (!area) return
    let last: HTMLElement | undefined
    const track = (event: FocusEvent) => {
      last = event.target as HTMLElement
    }
    const rescue = () => {
      const dropped = document.activeElement === null || document.activeElement === document.body
      if (!dropped || last === undefined || (last.isConnected && !last.matches(':disabled'))) return
      last = undefined
      const target = area.querySelector<HTMLElement>('[data-focus-rescue]') ?? area.querySelector<HTMLElement>('h2')
      if (!target) return
      if (!target.hasAttribute('tabindex')) target.tabIndex = -1
      target.focus({ preventScroll: true })
    }
    const observer = new MutationObserver(rescue)
    area.addEventListener('focusin', track)
    observer.observe(area, { childList: true, subtree: true, attributes: true, attributeFilter: ['disabled'] })
    return () => {
      observer.disconnect()
      area.removeEventListener('focusin', track)
    }
  }, [active])
}

/** Moves focus to the heading of a page just navigated to, so screen readers say where the user now is. */
export function focusHeading(root: HTMLElement | null): void {
  const heading = root?.querySelector<HTMLElement>('h2')
  if (!heading) return
  if (!heading.hasAttribute('tabindex')) heading.tabIndex = -1
  heading.focus({ preventScroll: true })
}
