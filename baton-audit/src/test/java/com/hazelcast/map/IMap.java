package com.hazelcast.map;

import java.util.concurrent.ConcurrentMap;

/** A stand-in with the binary name of Hazelcast's distributed map, so fixtures compile without Hazelcast. */
public interface IMap<K, V> extends ConcurrentMap<K, V> {}
