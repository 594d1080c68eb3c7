package memtree_test

const crashEnv = "MEMTREE_CRASH_CHILD"

func crashChild() {}
