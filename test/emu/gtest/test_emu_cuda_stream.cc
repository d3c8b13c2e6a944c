/**
 * gpumem tests: the emulated CUDA's streams: work that goes on with no call
 * asking, host functions in the stream's order, and waits that let other
 * threads go on.
 *
 * See file LICENSE for terms.
 */

#include "emu_cuda_test.h"

#include <common/watchdog.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>


/* Long enough for any step of the engine on a loaded machine */
static const auto emu_cuda_patience = std::chrono::seconds(30);

/* What a test's watchdog allows, a hang failing the test */
static const unsigned emu_cuda_hang = 120;

/* Waits, with no CUDA call, for @a flag; whether it came in time */
static bool wait_for(const std::atomic<int> &flag)
{
    auto deadline = std::chrono::steady_clock::now() + emu_cuda_patience;

    while (!flag.load()) {
        if (std::chrono::steady_clock::now() > deadline) {
            return false;
        }
        usleep(1000);
    }
    return true;
}

/* What a host function of these tests records */
struct host_record {
    std::atomic<int> called{0};
    std::thread::id  thread;
    std::vector<int> *order = NULL;
    int              value  = 0;
};

static void record_host_call(void *arg)
{
    host_record *record = (host_record*)arg;

    record->thread = std::this_thread::get_id();
    if (record->order != NULL) {
        record->order->push_back(record->value);
    }
    record->called = 1;
}


class emu_cuda_stream : public emu_cuda_test {
protected:
    emu_cuda_stream() : m_stream(NULL), m_src(0), m_dst(0) {}

    virtual void SetUp()
    {
        emu_cuda_test::SetUp();
        ASSERT_EQ(CUDA_SUCCESS, p_cuStreamCreate(&m_stream, 0));
        ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&m_src, size));
        ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&m_dst, size));
    }

    virtual void TearDown()
    {
        if (m_dst != 0) {
            EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(m_dst));
        }
        if (m_src != 0) {
            EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(m_src));
        }
        if (m_stream != NULL) {
            EXPECT_EQ(CUDA_SUCCESS, p_cuStreamDestroy(m_stream));
        }
        emu_cuda_test::TearDown();
    }

    /* Fills the source with a pattern of @a seed, and returns it */
    std::vector<unsigned char> fill_source(unsigned seed)
    {
        std::vector<unsigned char> bytes(size);

        for (size_t i = 0; i < bytes.size(); ++i) {
            bytes[i] = (unsigned char)(i * 31 + seed);
        }
        EXPECT_EQ(CUDA_SUCCESS, p_cuMemcpyHtoD(m_src, bytes.data(),
                                               bytes.size()));
        return bytes;
    }

    std::vector<unsigned char> read_destination()
    {
        std::vector<unsigned char> bytes(size);

        EXPECT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoH(bytes.data(), m_dst,
                                               bytes.size()));
        return bytes;
    }

    /* Many steps of the emu's engine (a quarter MiB each) */
    static const size_t size = 8ul << 20;

    CUstream    m_stream;
    CUdeviceptr m_src, m_dst;
};


/* A copy of many engine steps, then a host function: the function is
 * called, in a thread of the library, though no call asks about the
 * stream; the copy is then done */
TEST_F(emu_cuda_stream, work_goes_on_with_no_call_asking) {
    std::vector<unsigned char> bytes = fill_source(7);
    host_record record;

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoDAsync(m_dst, m_src, size, m_stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(m_stream, record_host_call,
                                               &record));
    EXPECT_TRUE(wait_for(record.called))
        << "the stream's work did not go on while no call asked";
    EXPECT_NE(std::this_thread::get_id(), record.thread);

    /* The function returned: its op leaves the stream at the next step */
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamQuery(m_stream));
    EXPECT_TRUE(bytes == read_destination()) << "the bytes copied differ";
}

/* Host functions and callbacks in the order queued, each after the work
 * queued before it; a callback is told its stream and its status */
TEST_F(emu_cuda_stream, host_functions_in_the_streams_order) {
    gpumem_test::watchdog watchdog("host functions in a stream",
                                   emu_cuda_hang);
    struct callback_seen {
        CUstream         stream;
        CUresult         status;
        std::vector<int> *order;
    } seen = {NULL, CUDA_ERROR_UNKNOWN, NULL};
    struct copy_seen {
        const std::vector<unsigned char> *expected, *landed;
        std::vector<int>                 *order;
        bool                             equal;
    } copied;
    std::vector<unsigned char> expected = fill_source(3), landed(size);
    std::vector<int> order;
    host_record first;

    first.order     = &order;
    first.value     = 1;
    seen.order      = &order;
    copied.expected = &expected;
    copied.landed   = &landed;
    copied.order    = &order;
    copied.equal    = false;

    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(m_stream, record_host_call,
                                               &first));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyAsync((uintptr_t)landed.data(), m_src,
                                            size, m_stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(
            m_stream,
            [](void *arg) {
                copy_seen *c = (copy_seen*)arg;

                /* The copy before is done: its bytes are in place */
                c->equal = (*c->expected == *c->landed);
                c->order->push_back(2);
            },
            &copied));
    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamAddCallback(
            m_stream,
            [](CUstream stream, CUresult status, void *arg) {
                callback_seen *s = (callback_seen*)arg;

                s->stream = stream;
                s->status = status;
                s->order->push_back(3);
            },
            &seen, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));

    EXPECT_EQ((std::vector<int>{1, 2, 3}), order);
    EXPECT_TRUE(copied.equal)
        << "a host function ran before the copy queued before it was done";
    EXPECT_EQ(m_stream, seen.stream);
    EXPECT_EQ(CUDA_SUCCESS, seen.status);
}

/* As UCX's cuda transports wait: an event recorded after a host function,
 * polled with cuEventQuery alone, completes once the function has run */
TEST_F(emu_cuda_stream, event_after_a_host_function_completes_by_polling) {
    host_record record;
    CUevent event;
    CUresult res = CUDA_ERROR_NOT_READY;

    ASSERT_EQ(CUDA_SUCCESS, p_cuEventCreate(&event, CU_EVENT_DISABLE_TIMING));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoDAsync(m_dst, m_src, size, m_stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(m_stream, record_host_call,
                                               &record));
    ASSERT_EQ(CUDA_SUCCESS, p_cuEventRecord(event, m_stream));

    auto deadline = std::chrono::steady_clock::now() + emu_cuda_patience;
    while ((res == CUDA_ERROR_NOT_READY) &&
           (std::chrono::steady_clock::now() < deadline)) {
        res = p_cuEventQuery(event);
    }
    EXPECT_EQ(CUDA_SUCCESS, res);
    EXPECT_EQ(1, record.called.load());
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
    EXPECT_EQ(CUDA_SUCCESS, p_cuEventDestroy(event));
}

/* A synchronize waits for the work queued before it, not for what another
 * thread goes on queueing: here a stream that is never empty */
TEST_F(emu_cuda_stream, synchronize_waits_for_earlier_work_only) {
    gpumem_test::watchdog watchdog("a synchronize while another thread "
                                   "queues", emu_cuda_hang);
    std::atomic<int> stop{0}, queued{0}, failed{0}, ended{0};
    CUcontext ctx   = m_ctx;
    CUstream stream = m_stream;
    host_record first;

    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(m_stream, record_host_call,
                                               &first));
    std::thread other([&]() {
        CUcontext popped;
        auto deadline = std::chrono::steady_clock::now() + emu_cuda_patience;

        if (p_cuCtxPushCurrent(ctx) != CUDA_SUCCESS) {
            failed = 1;
            return;
        }
        while (!stop.load() && (std::chrono::steady_clock::now() < deadline)) {
            if (p_cuLaunchHostFunc(stream, [](void*) { usleep(2000); },
                                   NULL) != CUDA_SUCCESS) {
                failed = 1;
                break;
            }
            ++queued;
            usleep(1000);
        }
        ended = 1;
        p_cuCtxPopCurrent(&popped);
    });

    while (queued.load() < 5) {
        usleep(1000);
    }
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
    int returned_while_queueing = !ended.load();
    stop = 1;
    other.join();
    EXPECT_EQ(1, first.called.load());
    EXPECT_EQ(0, failed.load());
    EXPECT_TRUE(returned_while_queueing)
        << "the synchronize waited for work queued after it";
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
}

/* The child of a fork of a process whose progress thread runs has no
 * CUDA, and does not hang in the lock the thread had */
TEST_F(emu_cuda_stream, child_of_a_fork_during_work_is_not_initialized) {
    gpumem_test::watchdog watchdog("a fork while the stream works",
                                   emu_cuda_hang);
    int status = 0;

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoDAsync(m_dst, m_src, size, m_stream));
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
        _exit((p_cuStreamQuery(m_stream) == CUDA_ERROR_NOT_INITIALIZED) ?
              0 : 1);
    }
    ASSERT_EQ(pid, waitpid(pid, &status, 0));
    EXPECT_TRUE(WIFEXITED(status) && (WEXITSTATUS(status) == 0))
        << "the child's query was not CUDA_ERROR_NOT_INITIALIZED";
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
}

/* A synchronize returns after the host function has */
TEST_F(emu_cuda_stream, synchronize_waits_for_a_host_function) {
    gpumem_test::watchdog watchdog("a synchronize of a host function",
                                   emu_cuda_hang);
    static std::atomic<int> returned;

    returned = 0;
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(
            m_stream,
            [](void*) {
                usleep(100000);
                returned = 1;
            },
            NULL));
    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
    EXPECT_EQ(1, returned.load());

    returned = 0;
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(
            NULL,
            [](void*) {
                usleep(100000);
                returned = 1;
            },
            NULL));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxSynchronize());
    EXPECT_EQ(1, returned.load());
}

/* A free waits for the context's work, a host function's too */
TEST_F(emu_cuda_stream, free_waits_for_a_host_function) {
    gpumem_test::watchdog watchdog("a free after a host function",
                                   emu_cuda_hang);
    host_record record;
    CUdeviceptr other;

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&other, 4096));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoDAsync(m_dst, m_src, size, m_stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(m_stream, record_host_call,
                                               &record));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemFree(other));
    EXPECT_EQ(1, record.called.load());
}

/* As NVIDIA documents: a host function may call no CUDA */
TEST_F(emu_cuda_stream, host_function_may_call_no_cuda) {
    gpumem_test::watchdog watchdog("a host function's CUDA call",
                                   emu_cuda_hang);
    struct {
        CUstream stream;
        CUresult res;
    } call = {m_stream, CUDA_SUCCESS};

    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(
            m_stream,
            [](void *arg) {
                auto c = (decltype(&call))arg;
                c->res = p_cuStreamQuery(c->stream);
                /* cuInit too, which a runtime calls first */
                if (p_cuInit(0) != CUDA_ERROR_NOT_PERMITTED) {
                    c->res = CUDA_ERROR_UNKNOWN;
                }
            },
            &call));
    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
    EXPECT_EQ(CUDA_ERROR_NOT_PERMITTED, call.res);
}

TEST_F(emu_cuda_stream, host_function_arguments_are_checked) {
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuLaunchHostFunc(m_stream, NULL, NULL));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuStreamAddCallback(m_stream, NULL, NULL, 0));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuStreamAddCallback(m_stream,
                                    [](CUstream, CUresult, void*) {}, NULL,
                                    1));
}

/* While one thread synchronizes a stream whose host function waits for
 * another thread, that thread's calls go on */
TEST_F(emu_cuda_stream, synchronize_lets_other_threads_call) {
    gpumem_test::watchdog watchdog("a synchronize while another thread "
                                   "calls", emu_cuda_hang);
    static std::atomic<int> go;
    std::atomic<int> called{0};
    CUresult other_res = CUDA_ERROR_UNKNOWN;
    CUcontext ctx      = m_ctx;
    CUstream stream    = m_stream;

    go = 0;
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(
            m_stream,
            [](void*) {
                auto deadline = std::chrono::steady_clock::now() +
                                emu_cuda_patience;
                while (!go.load() &&
                       (std::chrono::steady_clock::now() < deadline)) {
                    usleep(1000);
                }
            },
            NULL));

    std::thread other([&]() {
        CUcontext popped;

        /* Called while the test's thread synchronizes */
        usleep(50000);
        if (p_cuCtxPushCurrent(ctx) == CUDA_SUCCESS) {
            other_res = p_cuStreamQuery(stream);
            p_cuCtxPopCurrent(&popped);
        }
        called = 1;
        go     = 1;
    });

    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
    other.join();
    EXPECT_EQ(1, called.load());
    EXPECT_EQ(CUDA_ERROR_NOT_READY, other_res)
        << "the other thread's call did not find the host function running";
}

/* A stream destroyed, or a pointer that never was one: every call that
 * takes it says CUDA_ERROR_INVALID_HANDLE, and the process lives */
TEST_F(emu_cuda_stream, destroyed_or_garbage_stream_is_an_invalid_handle) {
    std::vector<unsigned char> bytes(4096, 7);
    std::vector<unsigned char> garbage(256, 0x5a);
    CUstream stream, fake = (CUstream)garbage.data();

    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamCreate(&stream, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamDestroy(stream));
    for (CUstream bad : {stream, fake}) {
        EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, p_cuStreamDestroy(bad));
        EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, p_cuStreamSynchronize(bad));
        EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, p_cuStreamQuery(bad));
        EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE,
                  p_cuMemcpyAsync(m_dst, (CUdeviceptr)bytes.data(),
                                  bytes.size(), bad));
    }

    /* The library still works */
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemcpyAsync(m_dst, (CUdeviceptr)bytes.data(),
                                            bytes.size(), m_stream));
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
}

TEST_F(emu_cuda_stream, destroyed_or_garbage_event_is_an_invalid_handle) {
    std::vector<unsigned char> garbage(256, 0xa5);
    CUevent event, fake = (CUevent)garbage.data();

    ASSERT_EQ(CUDA_SUCCESS, p_cuEventCreate(&event, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuEventRecord(event, m_stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuEventDestroy(event));
    for (CUevent bad : {event, fake}) {
        EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, p_cuEventDestroy(bad));
        EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, p_cuEventRecord(bad, m_stream));
        EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, p_cuEventQuery(bad));
        EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE, p_cuEventSynchronize(bad));
        EXPECT_EQ(CUDA_ERROR_INVALID_HANDLE,
                  p_cuStreamWaitEvent(m_stream, bad, 0));
    }
}

/* Host memory the CPU cannot read: CUDA_ERROR_INVALID_VALUE at the call,
 * where the emulated engine would fault copying it */
TEST_F(emu_cuda_stream, host_memory_that_cannot_be_read_is_an_invalid_value) {
    std::vector<unsigned char> bytes(4096, 3);
    void *page;

    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemcpyHtoD(m_dst, NULL, 4096));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemcpyDtoH(NULL, m_src, 4096));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemcpyAsync(m_dst, 0x1000, 4096, m_stream));

    page = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, page);
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemcpyHtoD(m_dst, page, 4096));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemcpyDtoH(page, m_src, 16));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE, p_cuMemsetD8((CUdeviceptr)page, 0,
                                                     16));
    munmap(page, 4096);

    /* A device range past its allocation, every time */
    for (int attempt = 0; attempt < 3; ++attempt) {
        EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
                  p_cuMemcpyHtoD(m_dst + size - 16, bytes.data(), 32));
    }
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemcpyHtoD(m_dst, bytes.data(), 4096));
}

/* A host destination the CPU may read but not write (a read-only mapping,
 * a page of code): CUDA_ERROR_INVALID_VALUE at the call, the page as it was
 * and the process alive; the same bytes made writable again are copied */
TEST_F(emu_cuda_stream, host_destination_that_cannot_be_written_is_refused) {
    std::vector<unsigned char> bytes(4096, 5);
    unsigned char *page;

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyHtoD(m_src, bytes.data(), 4096));
    page = (unsigned char*)mmap(NULL, 8192, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(MAP_FAILED, (void*)page);
    memset(page, 1, 8192);
    /* The second page only: a range is refused for any page of it */
    ASSERT_EQ(0, mprotect(page + 4096, 4096, PROT_READ));

    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemcpyDtoH(page + 4096, m_src, 16));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemcpyDtoH(page + 4000, m_src, 4096));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemcpyAsync((CUdeviceptr)(page + 4096), m_src, 16,
                              m_stream));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemsetD8((CUdeviceptr)(page + 4096), 0, 16));
    EXPECT_EQ(CUDA_ERROR_INVALID_VALUE,
              p_cuMemcpyDtoH(reinterpret_cast<void*>(&wait_for), m_src,
                             16));
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));
    EXPECT_EQ(std::vector<unsigned char>(8192, 1),
              std::vector<unsigned char>(page, page + 8192));

    /* The source side of the same pages is read as it was */
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemcpyHtoD(m_dst, page + 4096, 4096));

    ASSERT_EQ(0, mprotect(page + 4096, 4096, PROT_READ | PROT_WRITE));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoH(page + 4000, m_src, 4096));
    EXPECT_EQ(bytes, std::vector<unsigned char>(page + 4000, page + 8096));
    munmap(page, 8192);
}

/* Memory freed while another context's copy still waits to read it: the
 * engine finds the address unmapped, and that context's error is sticky,
 * as on a GPU: the stream says CUDA_ERROR_ILLEGAL_ADDRESS, and so does every
 * later call in the context, until it is destroyed. The work queued after
 * the copy ends moving nothing: a later copy writes nothing, a host
 * function is not called, a stream callback is told the error, an event
 * recorded after it says the error. The primary context goes on, and the
 * process lives */
TEST_F(emu_cuda_stream, fault_found_by_the_engine_is_sticky_in_its_context) {
    gpumem_test::watchdog watchdog("a copy of freed memory", emu_cuda_hang);
    static std::atomic<int> go, called;
    static std::atomic<CUresult> told;
    std::vector<unsigned char> bytes(4096, 7), back(4096, 0);
    CUdeviceptr freed, ptr = 0;
    CUstream stream;
    CUcontext ctx;
    CUevent event;

    go     = 0;
    called = 0;
    told   = CUDA_SUCCESS;
    /* A failed assertion below lets the host function return */
    std::unique_ptr<void, void(*)(void*)> release_go(
            &go, [](void*) { go = 1; });

    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyHtoD(m_dst, bytes.data(), 4096));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemsetD8(m_src, 9, 4096));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&freed, 4096));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxCreate(&ctx, NULL, 0, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamCreate(&stream, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuEventCreate(&event, 0));

    /* The copy waits behind a host function until the memory is freed;
     * more work waits behind the copy */
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(
            stream, [](void*) { wait_for(go); }, NULL));
    ASSERT_EQ(CUDA_SUCCESS,
              p_cuMemcpyAsync((CUdeviceptr)back.data(), freed, 4096, stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuEventRecord(event, stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemcpyAsync(m_dst, m_src, 4096, stream));
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(
            stream, [](void*) { called = 1; }, NULL));
    ASSERT_EQ(CUDA_SUCCESS, p_cuStreamAddCallback(
            stream, [](CUstream, CUresult status, void*) { told = status; },
            NULL, 0));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPopCurrent(NULL));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemFree(freed));
    go = 1;

    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPushCurrent(ctx));
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, p_cuStreamSynchronize(stream));
    expect_log("source device address");
    EXPECT_EQ(std::vector<unsigned char>(4096, 0), back);
    EXPECT_EQ(0, called.load()) << "a host function after the fault ran";
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, told.load());
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, p_cuEventQuery(event));
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, p_cuEventSynchronize(event));

    /* Sticky: asked again, and by other calls of the context */
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, p_cuStreamSynchronize(stream));
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, p_cuStreamQuery(stream));
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, p_cuCtxSynchronize());
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, p_cuMemAlloc(&ptr, 4096));
    EXPECT_EQ(0u, ptr);
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS,
              p_cuMemcpyAsync(m_dst, (CUdeviceptr)bytes.data(), 4096,
                              stream));

    /* The primary context, current again, is not this one: the later copy
     * wrote nothing */
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPopCurrent(NULL));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemcpyDtoH(back.data(), m_dst, 4096));
    EXPECT_EQ(bytes, back);
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(m_stream));

    /* Its end ends the error */
    EXPECT_EQ(CUDA_SUCCESS, p_cuEventDestroy(event));
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamDestroy(stream));
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxDestroy(ctx));
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxSynchronize());
}

/* A primary context whose work faulted is a new one after its last
 * release: its next retain has no error, of the context or of its NULL
 * stream */
TEST_F(emu_cuda_stream, primary_context_released_after_a_fault_starts_clean) {
    gpumem_test::watchdog watchdog("a fault of a primary context",
                                   emu_cuda_hang);
    static std::atomic<int> go;
    std::vector<unsigned char> back(4096, 0);
    CUdeviceptr freed, ptr = 0;
    CUcontext primary;
    int count = 0;

    ASSERT_EQ(CUDA_SUCCESS, p_cuDeviceGetCount(&count));
    if (count < 2) {
        GTEST_SKIP() << "one emulated GPU: no other primary context";
    }
    go = 0;
    std::unique_ptr<void, void(*)(void*)> release_go(
            &go, [](void*) { go = 1; });

    /* Device 0's memory, read by work of device 1's primary context, which
     * device 0's free does not wait for */
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&freed, 4096));
    ASSERT_EQ(CUDA_SUCCESS, p_cuDevicePrimaryCtxRetain(&primary, 1));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPushCurrent(primary));
    ASSERT_EQ(CUDA_SUCCESS, p_cuLaunchHostFunc(
            NULL, [](void*) { wait_for(go); }, NULL));
    ASSERT_EQ(CUDA_SUCCESS,
              p_cuMemcpyAsync((CUdeviceptr)back.data(), freed, 4096, NULL));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPopCurrent(NULL));
    ASSERT_EQ(CUDA_SUCCESS, p_cuMemFree(freed));
    go = 1;

    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPushCurrent(primary));
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, p_cuCtxSynchronize());
    expect_log("source device address");
    EXPECT_EQ(CUDA_ERROR_ILLEGAL_ADDRESS, p_cuMemAlloc(&ptr, 4096));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPopCurrent(NULL));
    ASSERT_EQ(CUDA_SUCCESS, p_cuDevicePrimaryCtxRelease(1));

    ASSERT_EQ(CUDA_SUCCESS, p_cuDevicePrimaryCtxRetain(&primary, 1));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPushCurrent(primary));
    EXPECT_EQ(CUDA_SUCCESS, p_cuStreamSynchronize(NULL));
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxSynchronize());
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemAlloc(&ptr, 4096));
    EXPECT_EQ(CUDA_SUCCESS, p_cuMemFree(ptr));
    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxPopCurrent(NULL));
    EXPECT_EQ(CUDA_SUCCESS, p_cuDevicePrimaryCtxRelease(1));
}

/* A context another thread destroyed, still current here: this thread's
 * next call says so, and the process lives */
TEST_F(emu_cuda_stream, context_destroyed_by_another_thread_is_said) {
    CUdeviceptr ptr = 0;
    CUcontext ctx;

    ASSERT_EQ(CUDA_SUCCESS, p_cuCtxCreate(&ctx, NULL, 0, 0));
    std::thread([&]() {
        EXPECT_EQ(CUDA_SUCCESS, p_cuCtxDestroy(ctx));
    }).join();

    EXPECT_EQ(CUDA_ERROR_CONTEXT_IS_DESTROYED, p_cuMemAlloc(&ptr, 4096));
    EXPECT_EQ(0u, ptr);
    EXPECT_EQ(CUDA_SUCCESS, p_cuCtxPopCurrent(NULL));
}
