/** The cluster's public face: how replicas tell each other about changes. */
export { LocalChangeBus, type Change, type ChangeBus, type ChangeHandler } from './bus.js';
export { RedisChangeBus, type RedisChangeBusOptions } from './redis-bus.js';
