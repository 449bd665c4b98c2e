package com.hazelcast.core;

import com.hazelcast.map.IMap;

/** A stand-in with the binary name of Hazelcast's instance type, for fixtures. */
public interface HazelcastInstance {
    <K, V> IMap<K, V> getMap(String name);
}
