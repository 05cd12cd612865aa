import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createInterface } from 'node:readline'

// SQLite's WAL-index lock bytes in the -shm file (see SQLite's wal.c): WAL_WRITE_LOCK and WAL_RECOVER_LOCK.
const WAL_LOCK_BASE = 120
const WAL_WRITE_LOCK = WAL_LOCK_BASE + 0
const WAL_RECOVER_LOCK = WAL_LOCK_BASE + 2
// The second copy of the WAL-index header; a reader that finds the two copies differ must run recovery.
const SECOND_HEADER = 48

/*
 * Another process, in the middle of WAL recovery (as the first process to open a database after a crash
 * is): it holds the write and recovery locks and the WAL-index header is not valid yet. Every reader and
 * writer of other processes gets SQLITE_BUSY until it is done. Node cannot take POSIX byte-range locks,
 * so a small python3 program (on every machine that builds native addons) holds them.
 */
const HOLDER = `
import fcntl, os, sys, time
fd = os.open(sys.argv[1], os.O_RDWR)
for offset in (${WAL_WRITE_LOCK}, ${WAL_RECOVER_LOCK}):
    for attempt in range(500):
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset, os.SEEK_SET)
            break
        except OSError:
            time.sleep(0.01)
    else:
        sys.exit('could not take the lock at %d' % offset)
original = os.pread(fd, 4, ${SECOND_HEADER})
os.pwrite(fd, bytes(b ^ 0xFF for b in original), ${SECOND_HEADER})
print('held', flush=True)
sys.stdin.readline()
os.pwrite(fd, original, ${SECOND_HEADER})
os.close(fd)
print('released', flush=True)
`

/** Makes the SQLite database at `path` look locked by a process running recovery, until release(). */
export async function holdSqliteRecoveryLock(path: string): Promise<{ release: () => Promise<void> }> {
  const child = spawn('python3', ['-c', HOLDER, `${path}-shm`], { stdio: ['pipe', 'pipe', 'inherit'] })
  const lines = createInterface({ input: child.stdout })[Symbol.asyncIterator]()
  const first = await lines.next()
  if (first.value !== 'held') throw new Error(`the lock holder did not start (exit ${child.exitCode})`)
  return {
    async release() {
      child.stdin.end('\n')
      await once(child, 'exit')
    },
  }
}
