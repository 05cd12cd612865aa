import { openInventoryFile } from '../inventory/import-file.js'
import { InventoryRecordSchema, PetStatusSchema } from '../inventory/inventory.schema.js'
import { InventoryService } from '../inventory/inventory.service.js'
import { openPetsFile } from '../pets/import-pets.js'
import { CategorySchema, PetRecordSchema, TagSchema } from '../pets/pet.schema.js'
import { PetsService } from '../pets/pets.service.js'
import { createValidator } from '../validation.js'
import { type CliIo, say, UsageError, withStorage } from './io.js'

/** `petstore import inventory FILE | import pets FILE`: all or nothing. */
export async function importCommand(args: string[], io: CliIo): Promise<void> {
  const [what, file, ...rest] = args
  if (!file || rest.length > 0) throw new UsageError('import: use import inventory FILE | import pets FILE')
  if (what === 'inventory') {
    const validate = createValidator([PetStatusSchema]).compile(InventoryRecordSchema)
    const source = await openInventoryFile(file, validate)
    const count = await withStorage(io, (storage) => new InventoryService(storage).importFile(source))
    say(io, `Imported ${count} inventory entries from ${file}.`)
  } else if (what === 'pets') {
    const validate = createValidator([PetStatusSchema, CategorySchema, TagSchema]).compile(PetRecordSchema)
    const source = await openPetsFile(file, validate)
    const count = await withStorage(io, (storage) => new PetsService(storage).importFile(source))
    say(io, `Imported ${count} pets from ${file}.`)
  } else {
    throw new UsageError('import: use import inventory FILE | import pets FILE')
  }
}
