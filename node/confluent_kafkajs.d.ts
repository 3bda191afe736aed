// Types of require('odradek').KafkaJS: @confluentinc/kafka-javascript's KafkaJS namespace as
// odradek implements it (lib/confluent_kafkajs.js).
/// <reference types="node" />
import * as odradek from './index'

export type { IHeaders, KafkaMessage, Batch, EachMessagePayload, EachBatchPayload, RecordMetadata, PartitionMetadata, ITopicConfig, TopicPartitions } from './index'

export enum logLevel { NOTHING = 0, ERROR = 1, WARN = 2, INFO = 3, DEBUG = 4 }
export enum CompressionTypes { None = 'none', GZIP = 'gzip', Snappy = 'snappy', LZ4 = 'lz4', ZSTD = 'zstd' }
export enum PartitionAssigners { roundRobin = 'roundrobin', range = 'range', cooperativeSticky = 'cooperative-sticky' }
export enum PartitionAssignors { roundRobin = 'roundrobin', range = 'range', cooperativeSticky = 'cooperative-sticky' }
export enum ConsumerGroupStates { UNKNOWN = 0, PREPARING_REBALANCE = 1, COMPLETING_REBALANCE = 2, STABLE = 3, DEAD = 4, EMPTY = 5 }
export enum ConsumerGroupTypes { UNKNOWN = 0, CONSUMER = 1, CLASSIC = 2 }
export enum IsolationLevel { READ_UNCOMMITTED = 0, READ_COMMITTED = 1 }
export const AclOperationTypes: typeof odradek.AclOperationTypes
/** librdkafka's error codes by name (`ERR__QUEUE_FULL`, `ERR_UNKNOWN_TOPIC_OR_PART`, ...). */
export const ErrorCodes: { readonly [name: string]: number }

export type Logger = {
  info: (message: string, extra?: object) => void
  error: (message: string, extra?: object) => void
  warn: (message: string, extra?: object) => void
  debug: (message: string, extra?: object) => void
  namespace: (namespace: string, logLevel?: logLevel) => Logger
  setLogLevel: (logLevel: logLevel) => void
}

export interface OauthbearerProviderResponse {
  value: string
  principal: string
  /** Milliseconds. */
  lifetime: number
  extensions?: Map<string, string> | { [key: string]: string }
}
export type SASLOptions =
  | { mechanism: 'plain' | 'scram-sha-256' | 'scram-sha-512', username: string, password: string }
  | { mechanism: 'oauthbearer', oauthBearerProvider?: () => Promise<OauthbearerProviderResponse> }

export interface RetryOptions { maxRetryTime?: number, initialRetryTime?: number, retries?: number }

/**
 * librdkafka properties, outside the kafkaJS block: dotted names go to the client, which
 * validates each; `debug`, `partitioner`, `retries`, `acks`, `log_level` and `stats_cb` too.
 */
export interface LibrdKafkaProperties { [property: string]: unknown }

export interface KafkaConfig {
  brokers?: string[]
  ssl?: boolean
  sasl?: SASLOptions
  clientId?: string
  connectionTimeout?: number
  authenticationTimeout?: number
  requestTimeout?: number
  enforceRequestTimeout?: boolean
  retry?: RetryOptions
  logLevel?: logLevel
  logger?: Logger
}
export interface ProducerConfig extends KafkaConfig {
  metadataMaxAge?: number
  allowAutoTopicCreation?: boolean
  idempotent?: boolean
  transactionalId?: string
  transactionTimeout?: number
  maxInFlightRequests?: number
  acks?: number
  compression?: CompressionTypes
  timeout?: number
}
export interface ConsumerConfig extends KafkaConfig {
  groupId?: string
  partitionAssigners?: PartitionAssigners[]
  partitionAssignors?: PartitionAssignors[]
  metadataMaxAge?: number
  sessionTimeout?: number
  rebalanceTimeout?: number
  heartbeatInterval?: number
  maxBytesPerPartition?: number
  minBytes?: number
  maxBytes?: number
  maxWaitTimeInMs?: number
  allowAutoTopicCreation?: boolean
  maxInFlightRequests?: number
  readUncommitted?: boolean
  rackId?: string
  fromBeginning?: boolean
  autoCommit?: boolean
  autoCommitInterval?: number
}
export interface CommonConstructorConfig extends LibrdKafkaProperties { kafkaJS?: KafkaConfig }
export interface ProducerConstructorConfig extends LibrdKafkaProperties { kafkaJS?: ProducerConfig }
export interface ConsumerConstructorConfig extends LibrdKafkaProperties { kafkaJS?: ConsumerConfig }
export interface AdminConstructorConfig extends LibrdKafkaProperties { kafkaJS?: KafkaConfig }

export interface Message {
  key?: Buffer | string | null
  value: Buffer | string | null
  partition?: number
  headers?: odradek.IHeaders
  timestamp?: string
}
export interface ProducerRecord { topic: string, messages: Message[] }
export interface ProducerBatch { topicMessages?: ProducerRecord[] }
export interface TopicOffsets { topic: string, partitions: { partition: number, offset: string }[] }
export interface TopicPartition { topic: string, partition: number }
export interface TopicPartitionOffset extends TopicPartition { offset: string }
export interface TopicPartitionOffsetAndMetadata extends TopicPartitionOffset { metadata?: string | null, leaderEpoch?: number | null }

interface Client {
  connect(): Promise<void>
  disconnect(): Promise<void>
  logger(): Logger
  dependentAdmin(): Admin
}

export interface Producer extends Client {
  send(record: ProducerRecord): Promise<odradek.RecordMetadata[]>
  sendBatch(batch: ProducerBatch): Promise<odradek.RecordMetadata[]>
  flush(args?: { timeout: number }): Promise<void>
  /** Resolves the producer itself: send, commit, abort and sendOffsets act on the transaction. */
  transaction(): Promise<Producer>
  commit(): Promise<void>
  abort(): Promise<void>
  sendOffsets(args: { consumer: Consumer, topics: TopicOffsets[] }): Promise<void>
  isActive(): boolean
  /** odradek's instrumentation events. */
  readonly events: odradek.ProducerEvents
  on(eventName: odradek.ProducerEvents[keyof odradek.ProducerEvents], listener: (event: odradek.InstrumentationEvent<any>) => void): odradek.RemoveInstrumentationEventListener
}
export type Transaction = Producer

export interface ConsumerRunConfig {
  eachBatchAutoResolve?: boolean
  partitionsConsumedConcurrently?: number
  eachMessage?: (payload: odradek.EachMessagePayload) => Promise<void>
  eachBatch?: (payload: odradek.EachBatchPayload) => Promise<void>
}
export interface GroupDescription extends Omit<odradek.GroupDescription, 'state'> {
  state: ConsumerGroupStates
  partitionAssignor: string
  isSimpleConsumerGroup: boolean
}

export interface Consumer extends Client {
  subscribe(subscription: { topics: (string | RegExp)[], replace?: boolean } | { topic: string | RegExp, replace?: boolean }): Promise<void>
  run(config?: ConsumerRunConfig): Promise<void>
  /** odradek's: stops consuming, committing what the handlers finished (the package has no stop). */
  stop(): Promise<void>
  commitOffsets(topicPartitions?: TopicPartitionOffsetAndMetadata[] | null): Promise<void>
  committed(topicPartitions?: TopicPartition[] | null, timeout?: number): Promise<TopicPartitionOffsetAndMetadata[]>
  seek(topicPartitionOffset: TopicPartitionOffset): void
  pause(topics: { topic: string, partitions?: number[] }[]): void
  paused(): { topic: string, partitions: number[] }[]
  resume(topics: { topic: string, partitions?: number[] }[]): void
  assignment(): TopicPartition[]
  rebalanceProtocol(): 'NONE' | 'EAGER' | 'COOPERATIVE'
  describeGroup(): Promise<GroupDescription>
  /** odradek's instrumentation events. */
  readonly events: odradek.ConsumerEvents
  on(eventName: odradek.ConsumerEvents[keyof odradek.ConsumerEvents], listener: (event: odradek.InstrumentationEvent<any>) => void): odradek.RemoveInstrumentationEventListener
}

export interface Admin {
  connect(): Promise<void>
  disconnect(): Promise<void>
  createTopics(options: { timeout?: number, topics: odradek.ITopicConfig[] }): Promise<boolean>
  deleteTopics(options: { topics: string[], timeout?: number }): Promise<void>
  listTopics(options?: { timeout?: number }): Promise<string[]>
  listGroups(options?: { timeout?: number }): Promise<{ groups: { groupId: string, protocolType: string, isSimpleConsumerGroup: boolean }[], errors: Error[] }>
  describeGroups(groups: string[], options?: { timeout?: number, includeAuthorizedOperations?: false }): Promise<{ groups: GroupDescription[] }>
  deleteGroups(groups: string[], options?: { timeout?: number }): Promise<{ groupId: string, errorCode: number, error: KafkaJSError | null }[]>
  fetchOffsets(options: { groupId: string, topics?: string[] | { topic: string, partitions: number[] }[], timeout?: number, requireStableOffsets?: false }): Promise<{ topic: string, partitions: { partition: number, offset: string, metadata: string | null, leaderEpoch: number | null, error: KafkaJSError | null }[] }[]>
  deleteTopicRecords(options: { topic: string, partitions: { partition: number, offset: string }[], timeout?: number }): Promise<{ topic: string, partition: number, lowWatermark: number, error: KafkaJSError | null }[]>
  fetchTopicMetadata(options?: { topics?: string[], timeout?: number, includeAuthorizedOperations?: false }): Promise<{ name: string, partitions: odradek.PartitionMetadata[] }[]>
  fetchTopicOffsets(topic: string, options?: { timeout?: number, isolationLevel?: IsolationLevel.READ_UNCOMMITTED }): Promise<{ partition: number, offset: string, high: string, low: string }[]>
  fetchTopicOffsetsByTimestamp(topic: string, timestamp?: number, options?: { timeout?: number, isolationLevel?: IsolationLevel.READ_UNCOMMITTED }): Promise<{ partition: number, offset: string }[]>
}

export class Kafka {
  constructor (config?: CommonConstructorConfig)
  producer(config?: ProducerConstructorConfig): Producer
  consumer(config: ConsumerConstructorConfig): Consumer
  admin(config?: AdminConstructorConfig): Admin
}

/** Errors carry librdkafka's `code` (see ErrorCodes), its name as `type`, and `fatal` / `abortable`. */
export class KafkaJSError extends odradek.KafkaJSError {
  readonly code: number
  readonly type: string
  readonly fatal: boolean
  readonly abortable: boolean
}
export class KafkaJSProtocolError extends KafkaJSError {}
export class KafkaJSOffsetOutOfRange extends KafkaJSProtocolError {}
export class KafkaJSConnectionError extends KafkaJSError {}
export class KafkaJSNoBrokerAvailableError extends KafkaJSConnectionError {}
export class KafkaJSRequestTimeoutError extends KafkaJSError {}
export class KafkaJSPartialMessageError extends KafkaJSError {}
export class KafkaJSSASLAuthenticationError extends KafkaJSError {}
export class KafkaJSGroupCoordinatorNotFound extends KafkaJSProtocolError {}
export class KafkaJSNotImplemented extends KafkaJSError {}
export class KafkaJSTimeout extends KafkaJSError {}
export class KafkaJSCreateTopicError extends KafkaJSProtocolError { readonly topic: string }
export class KafkaJSDeleteGroupsError extends KafkaJSError { readonly groups: { groupId: string, errorCode: number, error?: KafkaJSError }[] }
export class KafkaJSDeleteTopicRecordsError extends KafkaJSError { readonly partitions: { partition: number, offset: string, error: KafkaJSError }[] }
export class KafkaJSAggregateError extends Error { readonly errors: KafkaJSError[] }
export function isKafkaJSError (error: unknown): error is KafkaJSError
export function isRebalancing (error: { code?: number }): boolean
