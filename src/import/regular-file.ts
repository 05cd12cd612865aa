import { constants, type Stats } from 'node:fs'
import { open, stat, type FileHandle } from 'node:fs/promises'
import { InvalidInputError } from '../errors.js'

/**
 * Opens an import file for reading, refusing anything that is not a regular file: a device (a link
 * to /dev/zero never ends), a FIFO (it would wait forever for a writer; opened non-blocking, the
 * open itself does not wait), a directory or a socket. The check is made on the open handle, so the
 * file read is the file checked. Throws InvalidInputError saying why.
 */
export async function openRegularFile(path: string): Promise<FileHandle> {
  // Checked by path first, so a device is never even opened (opening some has side effects), and
  // again on the handle, so a file swapped in between is caught too.
  refuseUnlessRegular(path, await attempt(path, () => stat(path)))
  const handle = await attempt(path, () => open(path, constants.O_RDONLY | constants.O_NONBLOCK))
  try {
    refuseUnlessRegular(path, await handle.stat())
  } catch (error) {
    await handle.close()
    throw error
  }
  return handle
}

async function attempt<T>(path: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EACCES' ? 'permission denied' : (code ?? 'unreadable')
    throw new InvalidInputError(`Cannot read ${path}: ${why}`)
  }
}

function refuseUnlessRegular(path: string, stats: Stats) {
  if (stats.isFile()) return
  const what = stats.isDirectory()
    ? 'a directory'
    : stats.isFIFO()
      ? 'a FIFO'
      : stats.isCharacterDevice() || stats.isBlockDevice()
        ? 'a device'
        : 'not a regular file'
  throw new InvalidInputError(`Cannot read ${path}: it is ${what}; import reads regular files only`)
}
