// autocannon setupRequest for the PATCH scenario: a random pet and a random quantity per request.
// CommonJS (.cts -> .cjs) on purpose: autocannon worker threads require() this file by absolute path.
// The pet id range comes from autocannon's initialContext: { firstPetId, petCount }.

interface RequestParams {
  method?: string
  path?: string
  body?: string | Buffer
}

const QUANTITY_LIMIT = 2_147_483_648 // quantities are 0 .. 2^31 - 1

function setupPatchRequest(req: RequestParams, context: Record<string, unknown>): RequestParams {
  const firstPetId = Number(context['firstPetId'])
  const petCount = Number(context['petCount'])
  const petId = firstPetId + Math.floor(Math.random() * petCount)
  req.method = 'PATCH'
  req.path = `/v1/inventory/${petId}`
  req.body = `{"quantity":${Math.floor(Math.random() * QUANTITY_LIMIT)}}`
  return req
}

export = setupPatchRequest
