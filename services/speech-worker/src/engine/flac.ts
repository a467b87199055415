import { createHash, type Hash } from 'node:crypto';

/**
 * ffmpeg writes a FLAC file's STREAMINFO before the first frame and, on a pipe, can never go back to fill
 * in what it only knows at the end: the stream says 0 samples (players show no duration) and an all-zero
 * MD5. The engine therefore buffers flac like wav, has ffmpeg copy the very same 24 kHz samples to a
 * second pipe, and writes total samples and MD5 into the header itself.
 */
export class FlacSummary {
  private readonly md5: Hash = createHash('md5');
  private bytes = 0;

  /** The raw s16le mono samples the FLAC stream encodes, in order. */
  update(pcm: Buffer): void {
    this.md5.update(pcm);
    this.bytes += pcm.length;
  }

  /** Fills STREAMINFO's total samples and MD5 in `flac` (in place) and returns it. */
  patch(flac: Buffer): Buffer {
    return patchStreamInfo(flac, this.bytes / 2, this.md5.digest());
  }
}

// "fLaC", then the first metadata block, which must be STREAMINFO (type 0, 34 bytes) after its 4-byte header.
const STREAMINFO = 8;
const STREAMINFO_BYTES = 34;
/** Offset of the 64 bits that pack sample rate (20), channels-1 (3), bits-1 (5) and total samples (36). */
const PACKED = STREAMINFO + 10;
const MD5 = STREAMINFO + 18;
const TOTAL_SAMPLES_MASK = (1n << 36n) - 1n;

export function patchStreamInfo(flac: Buffer, totalSamples: number, md5: Buffer): Buffer {
  if (flac.length < STREAMINFO + STREAMINFO_BYTES || flac.toString('ascii', 0, 4) !== 'fLaC' || (flac[4]! & 0x7f) !== 0 || flac.readUIntBE(5, 3) !== STREAMINFO_BYTES) {
    throw new Error('ffmpeg output does not start with a FLAC STREAMINFO block');
  }
  const total = BigInt(totalSamples);
  if (total > TOTAL_SAMPLES_MASK) throw new Error('too many samples for a FLAC header');
  flac.writeBigUInt64BE((flac.readBigUInt64BE(PACKED) & ~TOTAL_SAMPLES_MASK) | total, PACKED);
  md5.copy(flac, MD5, 0, 16);
  return flac;
}
