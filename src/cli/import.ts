import { openInventoryFile } from '../inventory/import-file.js'
import { InventoryRecordSchema, PetStatusSchema } from '../inventory/inventory.schema.js'
import { InventoryService } from '../inventory/inventory.service.js'
import { openPetsFile } from '../pets/import-pets.js'
import { CategorySchema, PetRecordSchema, TagSchema } from '../pets/pet.schema.js'
import { PetsService } from '../pets/pets.service.js'
import { createValidator } from '../validation.js'
import { type CliIo, parseCommand, parseSubcommand, say, UsageError, withStorage } from './io.js'

const USAGE = 'import: use import inventory FILE | import pets FILE'

/** `petstore import inventory FILE | import pets FILE`: all or nothing. */
export async function importCommand(argv: string[], io: CliIo): Promise<void> {
  const { sub, args } = parseSubcommand('import', argv, { inventory: {}, pets: {} }, USAGE)
  const [file] = parseCommand(`import ${sub}`, args, {}, 1).positionals
  if (!file) throw new UsageError(USAGE)
  if (sub === 'inventory') {
    const validate = createValidator([PetStatusSchema]).compile(InventoryRecordSchema)
    const source = await openInventoryFile(file, validate)
    const count = await withStorage(io, (storage) => new InventoryService(storage).importFile(source))
    say(io, `Imported ${count} inventory entries from ${file}.`)
  } else {
    const validate = createValidator([PetStatusSchema, CategorySchema, TagSchema]).compile(PetRecordSchema)
    const source = await openPetsFile(file, validate)
    const count = await withStorage(io, (storage) => new PetsService(storage).importFile(source))
    say(io, `Imported ${count} pets from ${file}.`)
  }
}
