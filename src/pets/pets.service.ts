import type { DeprecatedCalls, Pet, PetImportRecord } from '../domain.js'
import { NotFoundError } from '../errors.js'
import { refusingDuplicates, type ImportSource } from '../import/import-source.js'
import type { DeprecatedCallStore, Imports, PetReads } from '../storage/ports.js'

export class PetsService {
  constructor(private readonly storage: PetReads & Pick<Imports, 'importPets'> & Pick<DeprecatedCallStore, 'listDeprecatedCalls'>) {}

  /** A pet, with its inventory entry's status when it has one. */
  async get(id: bigint): Promise<Pet> {
    const pet = await this.storage.getPet(id)
    if (!pet) throw new NotFoundError(`No pet ${id}`)
    return pet
  }

  /**
   * Inserts or replaces the pets of an import file, all or nothing, with their statuses set on their
   * inventory entries in the same transaction; resolves with their number. An id named twice is
   * refused, naming both places.
   */
  importFile(source: ImportSource<PetImportRecord>): Promise<number> {
    return refusingDuplicates(source, 'id', () => this.storage.importPets(source.chunks))
  }

  /** The counted calls of the deprecated pet lookup, per API key, as flushed so far. */
  deprecatedCalls(): Promise<(DeprecatedCalls & { name: string })[]> {
    return this.storage.listDeprecatedCalls()
  }
}
