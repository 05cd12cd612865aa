import { type Order, type OrderStatus, type Page, PetstoreError } from 'petstore-client'
import { useRef, useState } from 'preact/hooks'
import { describeProblem } from '../problems.js'
import { api, type Session } from '../session.js'
import { Notice, Pager, Problem, useRead } from '../parts.js'

const PAGE_SIZE = 50

/** The moves an order may make from each status (the API's rules; it refuses any other with 409). */
const MOVES: Record<OrderStatus, { label: string; to: OrderStatus }[]> = {
  placed: [
    { label: 'Approve', to: 'approved' },
    { label: 'Cancel', to: 'cancelled' },
  ],
  approved: [
    { label: 'Deliver', to: 'delivered' },
    { label: 'Cancel', to: 'cancelled' },
  ],
  delivered: [],
  cancelled: [],
}

export function OrdersPage({ session }: { session: Session }) {
  const [status, setStatus] = useState<OrderStatus | ''>('')
  const [trail, setTrail] = useState<(bigint | undefined)[]>([undefined])
  const [actionProblem, setProblem] = useState<string | undefined>()
  const [notice, setNotice] = useState<string | undefined>()
  const [petId, setPetId] = useState('')
  const [quantity, setQuantity] = useState('1')
  const [busy, setBusy] = useState(false)
  const canWrite = session.can('orders:write')
  const listing = useRead<Page<Order>>(
    (signal) =>
      session.can('orders:read')
        ? api.orders.page({ status: status || undefined, after: trail.at(-1), pageSize: PAGE_SIZE, signal })
        : Promise.reject(new Error('Seeing orders needs a key with the orders:read scope.')),
    [status, trail],
  )
  const orders = listing.value?.items ?? []
  const next = listing.value?.next
  const problem = actionProblem ?? listing.problem

  // Busy buttons stay focusable (aria-disabled, not disabled: a disabled button drops the keyboard's
  // focus); this guard makes a second press while the first runs do nothing.
  const running = useRef(false)
  const act = async (work: () => Promise<string>) => {
    if (running.current) return
    running.current = true
    setBusy(true)
    setProblem(undefined)
    setNotice(undefined)
    try {
      setNotice(await work())
      listing.reload()
    } catch (error) {
      // A 409 (not enough stock, a move the order cannot make) is said in the API's own words.
      setProblem(error instanceof PetstoreError ? error.message : describeProblem(error))
    } finally {
      running.current = false
      setBusy(false)
    }
  }

  const place = (event: Event) => {
    event.preventDefault()
    if (!canWrite) return
    const pet = petId.trim()
    const units = Number(quantity)
    if (!/^-?\d{1,19}$/.test(pet)) return setProblem('A pet ID is a whole number.')
    if (!Number.isInteger(units) || units < 1 || units > 2147483647)
      return setProblem('The quantity is a whole number from 1 to 2147483647.')
    void act(async () => {
      const order = await api.orders.place({ petId: BigInt(pet), quantity: units })
      return `Order ${order.id} placed: ${order.quantity} of pet ${order.petId}.`
    })
  }

  return (
    <section aria-labelledby="orders-heading">
      <h2 id="orders-heading">Orders</h2>
      <form class="controls" onSubmit={place}>
        <span class="field">
          <label for="order-pet">Pet ID</label>
          <input id="order-pet" inputMode="numeric" required value={petId} onInput={(e) => setPetId(e.currentTarget.value)} />
        </span>
        <span class="field">
          <label for="order-quantity">Quantity</label>
          <input id="order-quantity" inputMode="numeric" required value={quantity} onInput={(e) => setQuantity(e.currentTarget.value)} />
        </span>
        <button type="submit" aria-disabled={busy || !canWrite} aria-describedby={canWrite ? undefined : 'no-order-write'}>
          Place order
        </button>
      </form>
      <div class="controls">
        <label for="order-status">Status</label>
        <select
          id="order-status"
          value={status}
          onChange={(e) => {
            setProblem(undefined)
            setStatus(e.currentTarget.value as OrderStatus | '')
            setTrail([undefined])
          }}
        >
          <option value="">All</option>
          <option value="placed">Placed</option>
          <option value="approved">Approved</option>
          <option value="delivered">Delivered</option>
          <option value="cancelled">Cancelled</option>
        </select>
      </div>
      <Notice text={notice} />
      <Problem text={problem} onRetry={actionProblem === undefined ? listing.retry : undefined} />
      {!canWrite && (
        <p id="no-order-write" class="hint">
          Placing and moving orders needs a key with the orders:write scope.
        </p>
      )}
      <div class="table-scroll">
        <table aria-label="Orders" aria-busy={listing.busy}>
          <thead>
            <tr>
              <th scope="col">Order</th>
              <th scope="col">Pet</th>
              <th scope="col" class="num">
                Quantity
              </th>
              <th scope="col">Status</th>
              <th scope="col">
                <span class="visually-hidden">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {orders.map((order) => (
              <tr key={String(order.id)}>
                <td class="id">{String(order.id)}</td>
                <td class="id">{String(order.petId)}</td>
                <td class="num">{order.quantity}</td>
                <td>{order.status}</td>
                <td>
                  <div class="row-actions">
                    {MOVES[order.status].map((move) => (
                      <button
                        key={move.to}
                        type="button"
                        aria-disabled={busy || !canWrite}
                        aria-describedby={canWrite ? undefined : 'no-order-write'}
                        onClick={() =>
                          canWrite &&
                          void act(async () => {
                            const moved = await api.orders.update(order.id, { status: move.to })
                            return `Order ${moved.id} is ${moved.status}.`
                          })
                        }
                      >
                        {move.label}
                      </button>
                    ))}
                  </div>
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <Pager
        page={trail.length}
        hasNext={next !== undefined}
        onPrevious={() => setTrail(trail.slice(0, -1))}
        onNext={() => setTrail([...trail, next])}
      />
    </section>
  )
}
