// Package memory gives a tool module typed calls to the memory.read capability's
// host functions (memory_search, memory_recall, chunk_get, chunks_list, entities_top,
// sources_list).
//
// Importing it links those functions, so a module that uses it must request
// capabilities = ["memory.read"] in its manifest. The calls exist only in wasip1
// builds.
package memory
