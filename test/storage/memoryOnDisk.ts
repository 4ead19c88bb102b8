/** A WorkingMemory over the filesystem store's memory files in `dir` (its layout made, the template written). */
import { join } from 'node:path';
import { WorkingMemory } from '../../src/memory/workingMemory.js';
import { diskIOFor } from '../../src/storage/diskIO.js';
import { FileMemoryFiles } from '../../src/storage/fileMemoryFiles.js';

export async function memoryOnDisk(dir: string, tmpDir = `${dir}.tmp`, redact?: (text: string) => string): Promise<WorkingMemory> {
  const files = new FileMemoryFiles(join(dir), tmpDir, diskIOFor(dir));
  files.layout();
  const memory = new WorkingMemory(files, 'en', redact);
  await memory.init();
  return memory;
}
