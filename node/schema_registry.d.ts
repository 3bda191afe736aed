// Types of `odradek/schema-registry` (the API of @kafkajs/confluent-schema-registry).
export declare const SchemaType: { readonly AVRO: 'AVRO'; readonly JSON: 'JSON'; readonly PROTOBUF: 'PROTOBUF'; readonly UNKNOWN: 'UNKNOWN' }
export type SchemaTypeName = 'AVRO' | 'JSON' | 'PROTOBUF'
export declare const COMPATIBILITY: {
  readonly NONE: 'NONE'; readonly FULL: 'FULL'; readonly BACKWARD: 'BACKWARD'; readonly FORWARD: 'FORWARD'
  readonly BACKWARD_TRANSITIVE: 'BACKWARD_TRANSITIVE'; readonly FORWARD_TRANSITIVE: 'FORWARD_TRANSITIVE'; readonly FULL_TRANSITIVE: 'FULL_TRANSITIVE'
}
export interface SchemaReference { name: string; subject: string; version: number }
export interface ConfluentSchema { type?: SchemaTypeName; schema: string; references?: SchemaReference[] }
export interface SchemaRegistryAPIClientArgs {
  host: string
  auth?: { username: string; password?: string }
  clientId?: string
  retry?: { retries?: number; initialRetryTimeInMs?: number; maxRetryTimeInMs?: number; factor?: number; multiplier?: number }
  timeout?: number
  agent?: unknown
}
export interface RegisterOptions { subject?: string; compatibility?: string; separator?: string; updateConfig?: boolean }
export declare class SchemaRegistry {
  constructor (args: SchemaRegistryAPIClientArgs, options?: Record<string, unknown>)
  register (schema: ConfluentSchema | Record<string, unknown>, opts?: RegisterOptions): Promise<{ id: number }>
  getSchema (registryId: number): Promise<unknown>
  encode (registryId: number, payload: unknown): Promise<Buffer>
  decode (buffer: Buffer, options?: unknown): Promise<any>
  getRegistryId (subject: string, version: number | string): Promise<number>
  getRegistryIdBySchema (subject: string, schema: ConfluentSchema): Promise<number>
  getLatestSchemaId (subject: string): Promise<number>
}
export declare function readAVSC (path: string): Record<string, unknown>
export declare class ConfluentSchemaRegistryError extends Error {}
export declare class ConfluentSchemaRegistryArgumentError extends ConfluentSchemaRegistryError {}
export declare class ConfluentSchemaRegistryCompatibilityError extends ConfluentSchemaRegistryError {}
export declare class ConfluentSchemaRegistryInvalidSchemaError extends ConfluentSchemaRegistryError {}
export declare class ConfluentSchemaRegistryValidationError extends ConfluentSchemaRegistryError {}
export declare class ResponseError extends ConfluentSchemaRegistryError {
  status: number
  code: number
  url: string
  unauthorized: boolean
}
