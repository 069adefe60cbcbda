/* ThreadSanitizer's view of a hand-over it cannot see: a message whose bytes one thread wrote
 * and another reads after it passed through libzmq's lock-free pipes (libzmq is not built with
 * ThreadSanitizer). The sender releases the bytes' address before the send, the receiver
 * acquires it before reading: the happens-before the pipe gives, stated. No-ops in other
 * builds. */
#ifndef RS_TSAN_H
#define RS_TSAN_H

#if defined(__SANITIZE_THREAD__)
#define RS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RS_TSAN 1
#endif
#endif

#ifdef RS_TSAN
void __tsan_acquire(void *addr);
void __tsan_release(void *addr);
#define RS_TSAN_RELEASE(p) __tsan_release((void *)(p))
#define RS_TSAN_ACQUIRE(p) __tsan_acquire((void *)(p))
#else
#define RS_TSAN_RELEASE(p) ((void)0)
#define RS_TSAN_ACQUIRE(p) ((void)0)
#endif

#endif
