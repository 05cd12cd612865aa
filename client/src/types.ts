// The API's shapes, as the OpenAPI document declares them (generated: ./generated/openapi.ts), with
// every int64 a bigint.
import type { components, operations } from './generated/openapi.js'

type Schemas = components['schemas']
export type InventoryItem = Schemas['InventoryItem']
export type InventoryUpdate = Schemas['InventoryUpdate']
export type InventoryAdjustment = Schemas['InventoryAdjustment']
export type InventoryBatch = Schemas['InventoryBatch']
export type InventoryBatchChange = Schemas['InventoryBatchChange']
export type InventoryBatchResult = Schemas['InventoryBatchResult']
export type InventoryChange = Schemas['InventoryChange']
export type ChangeReason = Schemas['ChangeReason']
export type PetStatus = Schemas['PetStatus']
export type Order = Schemas['Order']
export type OrderCreate = Schemas['OrderCreate']
export type OrderStatus = Schemas['OrderStatus']
export type OrderUpdate = Schemas['OrderUpdate']
export type Reservation = Schemas['Reservation']
export type ReservationCreate = Schemas['ReservationCreate']
export type ReservationLine = Schemas['ReservationLine']
export type ReservationStatus = Schemas['ReservationStatus']
export type Pet = Schemas['Pet']
export type ApiKey = Schemas['ApiKey']
export type NewApiKey = Schemas['NewApiKey']
export type ApiKeyCreate = Schemas['ApiKeyCreate']
export type Scope = Schemas['Scope']
export type Webhook = Schemas['Webhook']
export type NewWebhook = Schemas['NewWebhook']
export type WebhookCreate = Schemas['WebhookCreate']
export type DeprecatedCalls = Schemas['DeprecatedCalls']
export type Location = Schemas['Location']
export type LocationCreate = Schemas['LocationCreate']
export type LocationUpdate = Schemas['LocationUpdate']
export type StockLevel = Schemas['StockLevel']
export type Transfer = Schemas['Transfer']
export type TransferResult = Schemas['TransferResult']
export type ErrorBody = Schemas['Error']
/** Every operationId of the document. */
export type OperationId = keyof operations

/**
 * One page of a paged listing, and the cursor that asks for the next one (none on the last page): its
 * `after`, or for the ledger read newest first (`changes` with `before`), its `before`.
 */
export interface Page<T> {
  items: T[]
  next: bigint | undefined
}
