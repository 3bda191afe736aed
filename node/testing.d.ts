// Types of odradek/testing: the in-process Kafka test cluster.

/** An API key: its name (`'Produce'`, `'OffsetCommit'`) or number. */
export type ApiKey = string | number
/** An error code: its protocol name (`'NOT_LEADER_OR_FOLLOWER'`) or number. */
export type ErrorCode = string | number

export interface ClusterOptions {
  /** Brokers (node ids 1..N; default 1). */
  brokers?: number
  /** Partitions of auto-created topics (`num.partitions`; default 1). */
  partitions?: number
  /** Topics created before the cluster starts. */
  topics?: Array<{ topic: string, numPartitions?: number }> | Record<string, number>
  /** Broker settings with Apache Kafka's names (`server.properties` keys). */
  config?: Record<string, string | number | boolean>
  /** `'memory'` (default), `'tempdir'`, or a directory that is kept after `stop()`. */
  storage?: string
  /** Turns the request log on from the first request. */
  recordRequests?: boolean
}

export interface RuleFilters {
  /** Only requests to this broker. */
  broker?: number
  /** Only this topic's items. */
  topic?: string
  /** Only this partition of `topic` (a Produce, Fetch, ListOffsets or OffsetForLeaderEpoch's other partitions are answered normally). */
  partition?: number
  /** Only requests with this client id. */
  clientId?: string
}

export interface RuleOptions extends RuleFilters {
  /** Answer with this error instead of handling the request. */
  error?: ErrorCode
  /** Handle the request, then answer this much later (with `error`: answer the error this much later). */
  delayMs?: number
  /** Read the request and never answer it. */
  drop?: boolean
  /** Close the connection instead of answering. */
  close?: boolean
  /** How many matching requests (null: every one until removed; default 1). */
  times?: number | null
}

export interface LoggedRequest {
  apiKey: number
  apiName: string
  apiVersion: number
  clientId: string | null
  correlationId: number
  /** The client's `host:port`. */
  peer: string
  /** The broker that received it. */
  broker: number
  partitions: Array<{ topic: string, partition: number }>
  /** What was done to the whole request (null: handled normally). */
  action: 'error' | 'delay' | 'drop' | 'close' | null
  /** The injected error's name when `action` is `'error'`. */
  error: string | null
  /** Errors injected into single partitions. */
  itemErrors: Array<{ topic: string, partition: number, error: string }>
}

export declare class Cluster {
  static start (options?: ClusterOptions): Promise<Cluster>
  /** `host:port,...` of every broker. */
  readonly bootstrap: string
  /** `['host:port', ...]`: KafkaJS's `brokers`. */
  readonly brokers: string[]
  readonly brokerIds: number[]
  readonly running: boolean
  readonly dataDir: string
  brokerAddress (broker: number): string
  createTopic (name: string, numPartitions?: number): void
  stop (): Promise<void>
  [Symbol.asyncDispose] (): Promise<void>

  pushRequestErrors (api: ApiKey, errors: ErrorCode[], options?: RuleFilters & { delaysMs?: number[] }): void
  addRule (api: ApiKey, options: RuleOptions): number
  delayResponses (api: ApiKey, delayMs: number, options?: RuleFilters & { times?: number | null }): number
  dropResponses (api: ApiKey, options?: RuleFilters & { times?: number | null }): number
  removeRule (id: number): boolean
  clearRules (): void
  readonly pendingRules: number

  closeConnections (options?: { broker?: number, clientId?: string }): Promise<number>
  connectionCount (broker: number): number
  setBrokerDown (broker: number): Promise<void>
  setBrokerUp (broker: number): Promise<void>
  isBrokerUp (broker: number): boolean
  setBrokerRtt (broker: number, rttMs: number): void

  setPartitionLeader (topic: string, partition: number, broker: number): number
  setPartitionFollower (topic: string, partition: number, broker: number | null): void
  partitionLeader (topic: string, partition: number): { leader: number, epoch: number, follower?: number | null }
  setCoordinator (kind: 'group' | 'transaction', key: string, broker: number | null): void
  coordinator (kind: 'group' | 'transaction', key: string): number
  setApiVersion (api: ApiKey, minVersion: number, maxVersion: number): void
  clearApiVersion (api: ApiKey): void

  recordRequests (on?: boolean): void
  requests (options?: { clear?: boolean }): LoggedRequest[]
}

/** Runs `fn` against a fresh cluster and stops it afterwards. */
export declare function withCluster<T> (options: ClusterOptions, fn: (cluster: Cluster) => Promise<T> | T): Promise<T>
export declare function withCluster<T> (fn: (cluster: Cluster) => Promise<T> | T): Promise<T>

type Hook = (fn: () => Promise<void>) => unknown

export interface ClusterHandle {
  /** The running cluster (null outside the tests). */
  readonly cluster: Cluster | null
  readonly bootstrap: string | null
  readonly brokers: string[] | null
}

/**
 * Registers a cluster's start and stop in a test framework's hooks: `{ before, after }`
 * (node:test), `{ beforeAll, afterAll }` (Jest, Vitest), `{ beforeEach, afterEach }` (a fresh
 * cluster per test); without hooks, the global `beforeAll` / `afterAll`.
 */
export declare function useCluster (options?: ClusterOptions, hooks?: { before?: Hook, after?: Hook, beforeAll?: Hook, afterAll?: Hook, beforeEach?: Hook, afterEach?: Hook }): ClusterHandle
