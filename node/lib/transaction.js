'use strict'
// KafkaJS's transaction object: send, sendBatch, sendOffsets, commit, abort, isActive.
//
// The producer's transactional id is initialised once (InitProducerId, fencing older
// instances) on the first transaction; every transaction then runs on that one native producer.
const { KafkaJSNonRetriableError, KafkaJSNotImplemented, fromNative } = require('./errors')

class Transaction {
  static async begin (producer, n) {
    if (typeof n.beginTransaction !== 'function') {
      throw new KafkaJSNotImplemented('transactions are not supported by this build of odradek (the core has no transaction API yet)')
    }
    try {
      if (!producer._transactionsReady) {
        await n.initTransactions()
        producer._transactionsReady = true
      }
      n.beginTransaction()
    } catch (e) {
      throw fromNative(e)
    }
    return new Transaction(producer, n)
  }

  constructor (producer, n) {
    this._producer = producer
    this._native = n
    this._active = true
  }

  isActive () {
    return this._active
  }

  _check () {
    if (!this._active) throw new KafkaJSNonRetriableError('Transaction is not active: it was committed or aborted')
  }

  async send ({ topic, messages, acks, timeout, compression } = {}) {
    return this.sendBatch({ topicMessages: [{ topic, messages }], acks, timeout, compression })
  }

  async sendBatch ({ topicMessages, acks, timeout, compression } = {}) {
    this._check()
    if (acks !== undefined && acks !== -1 && acks !== 'all') {
      throw new KafkaJSNonRetriableError('Transactional sends require acks -1 (all)')
    }
    this._producer._checkTransactionalSend({ timeout, compression })
    this._producer._check(topicMessages)
    try {
      return await this._native.send(topicMessages)
    } catch (e) {
      throw fromNative(e)
    }
  }

  /**
   * Adds a consumer group's offsets to the transaction (consume-transform-produce). With
   * `consumer` (a running member) the commit is fenced by its generation, as KafkaJS's
   * `sendOffsets({ consumer })` (KIP-447).
   */
  async sendOffsets ({ consumerGroupId, topics, consumer } = {}) {
    this._check()
    const groupId = consumerGroupId || (consumer && consumer._groupId)
    if (!groupId) throw new KafkaJSNonRetriableError('sendOffsets needs consumerGroupId')
    const offsets = []
    for (const { topic, partitions } of topics || []) {
      for (const { partition, offset } of partitions || []) offsets.push({ topic, partition, offset: String(offset) })
    }
    // With `consumer`, its membership (member id, generation, group.instance.id) goes with the
    // offsets: the coordinator fences a consumer that lost its partitions (KIP-447).
    const member = consumer && consumer._native ? consumer._native : null
    try {
      await this._native.sendOffsetsToTransaction(groupId, offsets, member)
    } catch (e) {
      throw fromNative(e)
    }
  }

  async commit () {
    this._check()
    try {
      await this._native.commitTransaction()
    } catch (e) {
      // Still active: an abortable failure is ended with abort().
      throw fromNative(e)
    }
    this._active = false
  }

  async abort () {
    this._check()
    try {
      await this._native.abortTransaction()
    } catch (e) {
      throw fromNative(e)
    }
    this._active = false
  }
}

module.exports = { Transaction }
