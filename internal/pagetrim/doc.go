// Package pagetrim hands back the executable's start-up pages once start-up
// is over.
//
// A Go binary's package initializers are spread over its whole text and
// read-only data, and the kernel maps file pages in 64 KiB blocks around each
// fault ("fault-around"), so by the time the daemon is ready most of the
// binary counts in its resident set although an idle daemon runs a small part
// of it. Release tells the kernel (madvise MADV_DONTNEED) that this process no
// longer needs the executable's read-only mappings: the pages stay in the page
// cache, shared and reclaimable, and any page the daemon runs again faults back
// in from there. Writable mappings (data, bss, heap) are never touched, nor a
// read-only one that holds a page written before it was made read-only (a
// position-independent build's relocated RELRO tables), so no state is
// lost; on systems other than Linux Release does nothing.
package pagetrim
